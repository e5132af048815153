"""Flow control: rate limits and group caps, exact across workers, on both engines."""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from shiftwork import App, ConfigurationError, FakeClock, JobContext, JobState
from shiftwork.flow.claiming import claim, claim_kind
from shiftwork.model.limits import ClaimFlow, ClaimKind, RateLimit, rate_limit
from shiftwork.model.outcome import Outcome

from .conftest import imported_app, running_worker, spawn_worker, wait_for
from .test_chaos import stop

T0 = datetime(2030, 1, 1, tzinfo=UTC)


# -- declaring ---------------------------------------------------------------------------


@pytest.mark.parametrize("text, per_second", [("100/s", 100), ("10/m", 10 / 60),
                                              ("5/h", 5 / 3600), ("2.5 / sec", 2.5)])
def test_rate_strings(text: str, per_second: float) -> None:
    limit = rate_limit(text, "t")
    assert limit is not None and limit.rate == pytest.approx(per_second)


@pytest.mark.parametrize("bad", ["100", "100/d", "-1/s", "0/s", "fast", 100])
def test_a_malformed_rate_is_refused_at_declaration(app: App, bad: Any) -> None:
    with pytest.raises(ConfigurationError, match="not understood"):
        @app.task(rate_limit=bad)
        def f() -> None: ...


def test_bad_flow_options_are_refused_at_declaration(app: App) -> None:
    with pytest.raises(ConfigurationError, match="not a parameter"):
        @app.task(group_by="acount", group_concurrency=1)
        def f(account: str) -> None: ...
    with pytest.raises(ConfigurationError, match="group_concurrency must be"):
        @app.task(group_by="account", group_concurrency=0)
        def g(account: str) -> None: ...
    with pytest.raises(ConfigurationError, match="needs group_by"):
        @app.task(group_concurrency=2)
        def h(account: str) -> None: ...
    with pytest.raises(ConfigurationError, match="n must be"):
        RateLimit(0)
    with pytest.raises(ConfigurationError, match="not understood"):
        app.queue("emails", rate_limit="lots")


def test_a_group_must_be_a_short_string_or_an_integer(app: App) -> None:
    @app.task(group_by="account", group_concurrency=1)
    def f(account: Any) -> None: ...

    f.enqueue(7)
    f.enqueue("acme")
    with pytest.raises(ConfigurationError, match="a group must be"):
        f.enqueue(["a", "list"])
    with pytest.raises(ConfigurationError, match="a group must be"):
        f.enqueue("x" * 500)


# -- the claim, under a fake clock -------------------------------------------------------


@pytest.fixture
def clocked(make_app: Callable[..., App]) -> tuple[App, FakeClock]:
    clock = FakeClock(T0)
    return make_app(clock=clock), clock


def test_a_rate_limit_spends_tokens_only_for_jobs_claimed(clocked: tuple[App, FakeClock]
                                                           ) -> None:
    app, clock = clocked

    @app.task(rate_limit=RateLimit(5, per=1, burst=5))
    def limited() -> None: ...

    @app.task
    def free() -> None: ...

    limited.enqueue_many([() for _ in range(20)])
    flow = app.runtime.registry.claim_flow("default")
    store = app.store
    assert len(claim(store, "default", 10, "w", 30, None, flow)) == 5  # a full bucket
    assert claim(store, "default", 10, "w", 30, None, flow) == []  # empty until it refills
    free.enqueue()
    assert [j.task for j in claim(store, "default", 10, "w", 30, None, flow)] == [free.name]
    clock.advance(0.4)
    assert len(claim(store, "default", 10, "w", 30, None, flow)) == 2
    clock.advance(60)  # refills to its capacity, no further
    assert len(claim(store, "default", 10, "w", 30, None, flow)) == 5
    assert all(j.state is JobState.AVAILABLE and j.attempt == 0
               for j in app.list_jobs(state="available", limit=100))


def test_a_queue_rate_limit_counts_every_task(clocked: tuple[App, FakeClock]) -> None:
    app, clock = clocked
    app.queue("default", rate_limit=RateLimit(3, burst=3))

    @app.task
    def a() -> None: ...

    @app.task
    def b() -> None: ...

    a.enqueue_many([() for _ in range(5)])
    b.enqueue_many([() for _ in range(5)])
    flow = app.runtime.registry.claim_flow("default")
    assert len(claim(app.store, "default", 10, "w", 30, None, flow)) == 3
    assert claim(app.store, "default", 10, "w", 30, None, flow) == []
    clock.advance(1)
    assert len(claim(app.store, "default", 10, "w", 30, None, flow)) == 3


def test_a_group_cap_skips_busy_groups_not_the_others(clocked: tuple[App, FakeClock]) -> None:
    app, _ = clocked

    @app.task(group_by="account", group_concurrency=1)
    def sync(account: str) -> None: ...

    for account in ["a"] * 300 + ["b", "b", "c"]:  # a's backlog is longer than a page
        sync.enqueue(account)
    flow = app.runtime.registry.claim_flow("default")
    first = claim(app.store, "default", 10, "w", 30, None, flow)
    assert sorted(j.meta["group"] for j in first) == ["a", "b", "c"]
    assert claim(app.store, "default", 10, "w", 30, None, flow) == []
    done = next(j for j in first if j.meta["group"] == "b")
    app.store.jobs.complete_many([Outcome(done.id, done.attempt, JobState.SUCCEEDED)])
    [again] = claim(app.store, "default", 10, "w", 30, None, flow)
    assert again.meta["group"] == "b"
    by_call = sync.using(group="vip").enqueue("a")  # the group given per call wins
    [vip] = claim(app.store, "default", 10, "w", 30, None, flow)
    assert vip.id == by_call.id


def test_each_group_has_its_own_rate_limit(clocked: tuple[App, FakeClock]) -> None:
    app, clock = clocked

    @app.task(group_by="account", group_rate_limit=RateLimit(2, per=60, burst=2))
    def sync(account: str) -> None: ...

    for account in ["a"] * 5 + ["b"] * 5:
        sync.enqueue(account)
    flow = app.runtime.registry.claim_flow("default")
    first = claim(app.store, "default", 10, "w", 30, None, flow)
    assert Counter(j.meta["group"] for j in first) == Counter(a=2, b=2)
    assert claim(app.store, "default", 10, "w", 30, None, flow) == []
    clock.advance(30)  # one token each
    assert Counter(j.meta["group"] for j in claim(app.store,
        "default", 10, "w", 30, None, flow)) == Counter(a=1, b=1)


def test_rate_limited_holds_the_task_back_and_spends_no_attempt(
        clocked: tuple[App, FakeClock]) -> None:
    app, clock = clocked

    @app.task(rate_limit="100/s")
    def call_partner(ctx: JobContext) -> None:
        ctx.rate_limited(retry_after=30)

    first = call_partner.enqueue()
    call_partner.enqueue()
    from shiftwork.testing import drain

    drain(app, max_jobs=1)
    job = app.get_job(first.id)
    assert job.state is JobState.SCHEDULED and job.attempt == 1
    assert job.max_attempts == call_partner.options.max_attempts  # not spent
    assert job.counted_attempt == 0
    flow = app.runtime.registry.claim_flow("default")
    clock.advance(10)
    assert claim(app.store, "default", 10, "w", 30, None, flow) == []  # held back
    clock.advance(21)
    assert len(claim(app.store, "default", 10, "w", 30, None, flow)) == 2


def test_claim_flow_is_empty_without_limits(app: App) -> None:
    @app.task
    def plain() -> None: ...

    assert not app.runtime.registry.claim_flow("default")
    assert isinstance(app.runtime.registry.claim_flow("default"), ClaimFlow)


# -- real worker processes ---------------------------------------------------------------


@pytest.fixture
def flow_app(db: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with imported_app(monkeypatch, "flow", db["dsn"], db["schema"]) as module:
        module.create_table()
        yield module


def _starts(module: Any) -> list[tuple[int, str, float, float]]:
    return [tuple(r) for r in module._conn().execute(  # type: ignore[misc]
        f"SELECT job_id, grp, started, ended FROM {module.table()} ORDER BY started")]


def test_two_workers_hold_a_rate_limit_together(flow_app: Any, db: dict[str, str]) -> None:
    total = 100  # about 5 s at 20 a second: five one-second windows to check
    flow_app.limited.enqueue_many([(i,) for i in range(total)])
    workers = [spawn_worker(db, "flow", ["limited=10"]) for _ in range(2)]
    try:
        wait_for(lambda: len(_starts(flow_app)) >= total, timeout=60, what="all jobs ran")
    finally:
        for w in workers:
            stop(w)
    times = [s[2] for s in _starts(flow_app)]
    assert len(times) == total
    # In any one-second window: 20, plus the burst saved up (2 by default), plus one
    # for the workers' clocks being read a moment apart.
    busiest = max(sum(1 for t in times if start <= t < start + 1.0) for start in times)
    assert busiest <= 20 + 2 + 1, busiest
    span = times[-1] - times[0]
    assert span >= (total - 2) / 20 * 0.9, span
    assert span < (total - 2) / 20 + 3, span  # as soon as tokens allow, not per poll


def test_two_workers_run_one_job_per_group_at_a_time(flow_app: Any, db: dict[str, str]
                                                      ) -> None:
    accounts = ["a", "b", "c"]
    flow_app.per_account.enqueue_many([(acc, 0.15) for acc in accounts for _ in range(6)])
    workers = [spawn_worker(db, "flow", ["grouped=4"]) for _ in range(2)]
    try:
        wait_for(lambda: len(_starts(flow_app)) >= 18, timeout=60, what="all jobs ran")
    finally:
        for w in workers:
            stop(w)
    spans: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for _, grp, started, ended in _starts(flow_app):
        spans[grp].append((started, ended))
    for grp, runs in spans.items():
        runs.sort()
        for (_, end), (start, _) in itertools.pairwise(runs):
            assert start >= end - 0.01, f"two jobs of group {grp} ran at once"
    # Different groups did run side by side.
    everything = sorted((s, e) for runs in spans.values() for s, e in runs)
    assert any(b[0] < a[1] for a, b in itertools.pairwise(everything))
    assert Counter({g: len(r) for g, r in spans.items()}) == Counter(a=6, b=6, c=6)


def test_an_in_process_worker_waits_for_tokens_not_the_poll_interval(
        make_app: Callable[..., App]) -> None:
    import dataclasses

    from .conftest import FAST

    app = make_app(settings=dataclasses.replace(FAST, poll_interval=30))
    seen: list[float] = []

    @app.task(rate_limit="10/s")
    def tick() -> None:
        import time

        seen.append(time.monotonic())

    tick.enqueue_many([() for _ in range(15)])
    with running_worker(app):
        wait_for(lambda: len(seen) >= 15, timeout=20, what="all 15 ran")
    assert seen[-1] - seen[0] < 3  # a token every 0.1 s: not one start per 30 s poll


# -- visible -------------------------------------------------------------------------------


def test_limits_and_their_tokens_are_visible(clocked: tuple[App, FakeClock]) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    from shiftwork.observe.metrics import Metrics

    app, _ = clocked
    app.queue("default", rate_limit=RateLimit(10, burst=10))

    @app.task(rate_limit="2/s", group_by="account", group_rate_limit="1/s")
    def sync(ctx: JobContext, account: str) -> None:
        ctx.rate_limited(retry_after=5)

    sync.enqueue("a")
    statuses = {s.key: s for s in app.rate_limits()}
    assert statuses["queue:default"].tokens is None  # never used: full
    from shiftwork.testing import drain

    drain(app, max_jobs=1)  # claims one: spends a token of each bucket, then pushes back
    statuses = {s.key: s for s in app.rate_limits()}
    assert statuses["queue:default"].tokens == pytest.approx(9)
    assert statuses["task:" + sync.name].tokens == 0  # pushed back by ctx.rate_limited
    assert statuses["group:" + sync.name + ":*"].tokens is None
    metrics = Metrics(app)
    try:
        seen = {(s.name, tuple(sorted(s.labels.items()))): s.value
                for f in text_string_to_metric_families(metrics.exposition().decode())
                for s in f.samples}
    finally:
        metrics.close()
    assert seen[("shiftwork_rate_limit_tokens", (("limit", "queue:default"),))] == 9
    assert not any(name == "shiftwork_rate_limit_tokens" and "group:" in str(labels)
                   for name, labels in seen)


_R = RateLimit(5)


@pytest.mark.parametrize(("limits", "flow", "kind"), [
    ({}, ClaimFlow(), ClaimKind.PLAIN),
    ({}, ClaimFlow(weights={"a": 2}), ClaimKind.PLAIN),  # weights mean nothing unless fair
    ({}, ClaimFlow(queue_rate=_R), ClaimKind.QUEUE_RATE),
    ({}, ClaimFlow(task_rates={"t": _R}), ClaimKind.TASK_RATES),
    ({}, ClaimFlow(task_rates={"t": _R, "u": _R}), ClaimKind.TASK_RATES),
    ({}, ClaimFlow(fair=True), ClaimKind.FAIR),
    ({"t": 2}, ClaimFlow(), ClaimKind.LIMITED),
    ({"t": 2}, ClaimFlow(queue_rate=_R), ClaimKind.LIMITED),
    ({}, ClaimFlow(queue_rate=_R, task_rates={"t": _R}), ClaimKind.LIMITED),
    ({}, ClaimFlow(group_caps={"t": 1}), ClaimKind.LIMITED),
    ({}, ClaimFlow(group_rates={"t": _R}), ClaimKind.LIMITED),
    ({}, ClaimFlow(fair=True, weights={"a": 2}), ClaimKind.FAIR_LIMITED),
    ({"t": 2}, ClaimFlow(fair=True), ClaimKind.FAIR_LIMITED),
    ({}, ClaimFlow(fair=True, queue_rate=_R), ClaimKind.FAIR_LIMITED),
])
def test_a_claim_is_chosen_by_its_kind(limits: dict[str, int], flow: ClaimFlow,
                                       kind: ClaimKind) -> None:
    """Each kind is one statement on Postgres (a function) or one of the Python loops: the
    queue's limits pick it, and only the plain shapes get the one-statement claims."""
    assert claim_kind(limits, flow) is kind
