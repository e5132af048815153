"""Fair queues: claims go round-robin across groups, on both engines."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from shiftwork import App, ConfigurationError, FakeClock, JobState
from shiftwork.flow.claiming import claim
from shiftwork.model.outcome import Outcome

from .conftest import imported_app, spawn_worker, wait_for
from .test_chaos import stop

T0 = datetime(2030, 1, 1, tzinfo=UTC)


@pytest.fixture(params=["weighted", "unweighted"])
def fair_app(make_app: Callable[..., App], request: pytest.FixtureRequest) -> App:
    app = make_app(clock=FakeClock(T0))
    # Weights make the claim take the general steps (flow/claim_fair.py); without them, on
    # PostgreSQL, a fair queue is claimed in one statement (jobs_claim_fair): both are tested.
    if request.param == "weighted":
        app.queue("emails", fair=True, weights={"vip": 2})
    else:
        app.queue("emails", fair=True)
    return app


def _claim(app: App, n: int) -> list[str]:
    jobs = claim(app.store, "emails", n, "w", 30, None,
                                  app.runtime.registry.claim_flow("emails"))
    return sorted(str(j.meta.get("group")) for j in jobs)  # one claim's jobs: as a set


def test_a_flood_does_not_starve_a_small_group(fair_app: App) -> None:
    @fair_app.task(queue="emails", group_by="account")
    def send(account: str) -> None: ...

    send.enqueue_many([("a",)] * 500)
    send.enqueue_many([("b",)] * 3)
    got = [g for _ in range(8) for g in _claim(fair_app, 1)]
    assert got[:6] == ["a", "b", "a", "b", "a", "b"] or got[:6] == ["b", "a", "b", "a", "b", "a"]
    assert got[6:] == ["a", "a"]


def test_one_claim_takes_one_job_of_each_group_in_turn(fair_app: App) -> None:
    @fair_app.task(queue="emails", group_by="account")
    def send(account: str) -> None: ...

    for account in ["c"] * 50 + ["a"] * 50 + ["b"] * 2:
        send.enqueue(account)
    assert _claim(fair_app, 4) == ["a", "a", "b", "c"]  # a round, then a again
    assert _claim(fair_app, 4) == ["a", "b", "c", "c"]  # on from where it left off: b, c, a, c
    assert _claim(fair_app, 2) == ["a", "c"]  # b is done


def test_priority_wins_within_a_group_and_weights_give_more_turns(fair_app: App) -> None:
    @fair_app.task(queue="emails", group_by="account")
    def send(account: str, n: int) -> None: ...

    send.enqueue_many([("vip", i) for i in range(10)] + [("z", i) for i in range(5)])
    urgent = send.using(priority=10).enqueue("z", 99)
    jobs = claim(fair_app.store, "emails", 3, "w", 30, None,
                                  fair_app.runtime.registry.claim_flow("emails"))
    assert sorted(j.meta["group"] for j in jobs) == ["vip", "vip", "z"]
    assert urgent.id in {j.id for j in jobs}
    # A weight is kept across claims of one job each.
    turns = [g for _ in range(6) for g in _claim(fair_app, 1)]
    if fair_app.runtime.registry.claim_flow("emails").weights:
        assert turns == ["vip", "vip", "z", "vip", "vip", "z"]
    else:
        assert turns in (["vip", "z"] * 3, ["z", "vip"] * 3), turns


def test_a_group_whose_jobs_are_due_later_does_not_hold_up_the_others(fair_app: App
                                                                      ) -> None:
    @fair_app.task(queue="emails", group_by="account")
    def send(account: str) -> None: ...

    send.using(delay=3600).enqueue("a")  # first in key order, due in an hour
    send.enqueue_many([("b",)] * 2 + [("c",)] * 2)
    # Claims of one job each (a worker with one slot): past a, every time.
    assert [g for _ in range(4) for g in _claim(fair_app, 1)] == ["b", "c", "b", "c"]
    assert _claim(fair_app, 1) == []


def test_jobs_without_a_group_take_one_turn_per_round(fair_app: App) -> None:
    @fair_app.task(queue="emails", group_by="account")
    def send(account: str) -> None: ...

    @fair_app.task(queue="emails")
    def plain() -> None: ...

    send.enqueue_many([("a",)] * 20 + [("b",)] * 20)
    plain.enqueue_many([()] * 5)
    first = _claim(fair_app, 7)  # a round of three fits: each group's share of the claim
    assert first == ["None", "None", "a", "a", "a", "b", "b"] or \
        first == ["None", "a", "a", "a", "b", "b", "b"], first
    assert "None" in _claim(fair_app, 3)


def test_a_rescued_job_returns_to_its_groups_turn(fair_app: App) -> None:
    @fair_app.task(queue="emails", group_by="account")
    def send(account: str) -> None: ...

    send.enqueue_many([("a",)] * 20)
    [b] = [send.enqueue("b")]
    jobs = claim(fair_app.store, "emails", 2, "w", 30, None,
                                  fair_app.runtime.registry.claim_flow("emails"))
    assert sorted(j.meta["group"] for j in jobs) == ["a", "b"]
    held = next(j for j in jobs if j.id == b.id)
    # It fails (as a rescue would send it back): it waits again, and b gets its turn.
    fair_app.store.jobs.complete_many([Outcome(held.id, held.attempt, JobState.RETRYING,
                                               run_at=None)])
    assert _claim(fair_app, 2) == ["a", "b"]


def test_group_caps_and_rates_still_hold_on_a_fair_queue(fair_app: App) -> None:
    @fair_app.task(queue="emails", group_by="account", group_concurrency=1)
    def send(account: str) -> None: ...

    send.enqueue_many([("a",)] * 20 + [("b",)] * 20)
    assert sorted(_claim(fair_app, 10)) == ["a", "b"]
    assert _claim(fair_app, 10) == []


def test_bad_fair_options_are_refused(fair_app: App) -> None:
    with pytest.raises(ConfigurationError, match="weights need fair=True"):
        fair_app.queue("x", weights={"a": 2})
    with pytest.raises(ConfigurationError, match="weight of group 'a'"):
        fair_app.queue("x", fair=True, weights={"a": 0})
    with pytest.raises(ConfigurationError, match="fair must be True or False"):
        fair_app.queue("x", fair="yes")  # type: ignore[arg-type]


# -- real worker processes ---------------------------------------------------------------


@pytest.fixture
def flow_app(db: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with imported_app(monkeypatch, "flow", db["dsn"], db["schema"]) as module:
        module.create_table()
        yield module


def _starts(module: Any) -> list[tuple[int, str, float, float]]:
    return [tuple(r) for r in module._conn().execute(  # type: ignore[misc]
        f"SELECT job_id, grp, started, ended FROM {module.table()} ORDER BY started, job_id")]


@pytest.mark.fault
def test_a_small_group_starts_before_2_percent_of_a_flood(flow_app: Any, db: dict[str, str]
                                                          ) -> None:
    flood, small = 20_000, 20
    flow_app.fair_job.enqueue_many([("A",)] * flood)
    flow_app.fair_job.enqueue_many([("B",)] * small)
    workers = [spawn_worker(db, "flow", ["fair=4"]) for _ in range(2)]
    try:
        wait_for(lambda: sum(1 for s in _starts(flow_app) if s[1] == "B") >= small,
                 timeout=120, what="every B job started")
    finally:
        for w in workers:
            stop(w)
    order = [grp for _, grp, _, _ in _starts(flow_app)]
    last_b = max(i for i, grp in enumerate(order) if grp == "B")
    a_before = order[:last_b].count("A")
    # Round-robin: B's jobs alternate with A's (give or take a claim batch per worker).
    assert a_before < flood * 0.02, a_before
    assert order.count("B") == small


@pytest.mark.fault
def test_limits_hold_across_a_worker_sigkill(flow_app: Any, db: dict[str, str]) -> None:
    """On a fair queue under a rate limit and a group cap: a worker dies holding jobs; they
    are rescued back into their groups' turns and every limit still holds."""
    import signal

    accounts = [f"acct{i}" for i in range(16)]
    total = 200
    flow_app.guarded.enqueue_many([(accounts[i % 16], 0.5) for i in range(total)])
    victim = spawn_worker(db, "flow", ["guarded=12"])
    survivor = spawn_worker(db, "flow", ["guarded=12"])
    try:
        wait_for(lambda: len(_starts(flow_app)) >= 40, timeout=60, what="some jobs ran")

        def victim_runs_jobs() -> bool:
            held = {j.id for j in flow_app.app.list_jobs(JobState.RUNNING, "guarded", limit=100)
                    if (j.worker_id or "").split(":")[-2:-1] == [str(victim.pid)]}
            # A run it has begun (its start written), not only a claim: killed between its
            # claim's commit and the job's first line, no run would be cut short.
            return any(r[0] in held and r[3] is None for r in _starts(flow_app))

        # Killed while it runs some (at the rate limit's pace it may briefly hold none).
        wait_for(victim_runs_jobs, timeout=30, interval=0.005, what="the victim running jobs")
        killed_at = time.time()
        stop(victim, signal.SIGKILL)  # dies holding jobs: their leases lapse, then rescue
        wait_for(lambda: len({s[0] for s in _starts(flow_app)}) >= total, timeout=90,
                 what="every job ran")
    finally:
        stop(victim, signal.SIGKILL)
        stop(survivor)
    runs = _starts(flow_app)
    finished = [r for r in runs if r[3] is not None]
    # Each job finished, and once, but for a run the victim finished just before the kill
    # and never recorded (at least once: it runs again, as it must).
    assert {r[0] for r in finished} == {r[0] for r in runs} and len(runs) > 0
    first_end: dict[int, float] = {}
    for job_id, _, _, ended in sorted(finished, key=lambda r: r[3]):
        if job_id in first_end:
            assert first_end[job_id] <= killed_at + 0.05, f"job {job_id} finished twice"
        first_end.setdefault(job_id, ended)
    assert len(first_end) == total
    assert len(runs) > total  # some runs were cut short by the kill and ran again
    times = sorted(r[2] for r in runs)
    # The rate holds, rescued starts included: 20 a second plus the burst of 2, plus one
    # for the two workers' clocks being read a moment apart.
    busiest = max(sum(1 for t in times if s <= t < s + 1.0) for s in times)
    assert busiest <= 20 + 2 + 1, busiest
    span = times[-1] - times[0]  # 200 starts at 20 a second, and one lease lapse
    assert (total - 2) / 20 * 0.9 <= span < (total - 2) / 20 + 5, span
    by_group: dict[str, list[tuple[float, float]]] = {}
    for _, grp, started, ended in finished:
        by_group.setdefault(grp, []).append((started, ended))
    for grp, spans in by_group.items():
        spans.sort()
        for (_, end), (start, _) in itertools.pairwise(spans):
            assert start >= end - 0.01, f"two jobs of group {grp} ran at once"
    # Group counts come back: nothing is left running, and the bucket holds what it should.
    groups = flow_app.app.store.observe.groups_busiest("guarded", 10)
    assert groups == []


# -- visible -------------------------------------------------------------------------------


def test_the_busiest_groups_are_visible(flow_app: Any, db: dict[str, str]) -> None:
    import os
    import subprocess
    import sys

    from prometheus_client.parser import text_string_to_metric_families
    from starlette.testclient import TestClient

    from shiftwork.observe.metrics import Metrics
    from shiftwork.web.dashboard import create_dashboard

    from .conftest import ROOT

    app = flow_app.app
    flow_app.fair_job.enqueue_many([("big",)] * 30 + [(f"g{i}",) for i in range(12)])
    claim(app.store, "fair", 2, "w", 30, None, app.runtime.registry.claim_flow("fair"))
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'src'}", "COLUMNS": "200",
           "SHIFTWORK_TEST_DSN": db["dsn"], "SHIFTWORK_TEST_SCHEMA": db["schema"],
           "SHIFTWORK_APP": "tests.apps.flow:app"}
    out = subprocess.run([sys.executable, "-m", "shiftwork.cli", "queues"], capture_output=True,
                         text=True, cwd=ROOT, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    table = out.stdout[out.stdout.index("busiest groups"):]
    rows = [line.split() for line in table.splitlines() if line.strip().startswith("fair")]
    assert rows[0] == ["fair", "(fair)", "big", "29", "1"]  # the busiest first, ten at most
    assert len(rows) == 10
    page = TestClient(create_dashboard(app, authenticate=lambda r: True),
                      base_url="http://127.0.0.1").get("/")
    assert "Busiest groups" in page.text and 'data-group="big"' in page.text
    metrics = Metrics(app)
    try:
        seen = {(s.name, tuple(sorted(s.labels.items()))): s.value
                for f in text_string_to_metric_families(metrics.exposition().decode())
                for s in f.samples if s.name == "shiftwork_queue_groups"}
    finally:
        metrics.close()
    # One series per queue and state, whatever the number of groups (g0 runs its only job).
    assert seen == {("shiftwork_queue_groups", (("queue", "fair"), ("state", "waiting"))): 12,
                    ("shiftwork_queue_groups", (("queue", "fair"), ("state", "running"))): 2}
