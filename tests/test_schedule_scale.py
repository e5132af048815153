"""Schedules at scale, in process on both engines: the firing batch and the due read.

The leader fires many schedules per transaction (worker/scheduler.FIRE_BATCH), and its
pass reads only the schedules that are due, through indexes kept with the cursor.
(Real worker processes and a killed leader: tests/test_schedule_chaos.py.)
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import psycopg
import pytest

from shiftwork import App, FakeClock
from shiftwork.model.schedule_values import RunKind, RunStatus
from shiftwork.schedules import scheduler
from shiftwork.schedules.scheduler import reconcile, run_pass
from shiftwork.schedules.stored import StoredSchedules, schedules_of
from shiftwork.store.fleet import LEADER_NAME

T0 = datetime(2030, 1, 1, tzinfo=UTC)
NOT_DUE = 100_000


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
def sapp(make_app: Callable[..., App], clock: FakeClock) -> App:
    return make_app(clock=clock)


def noop() -> None:
    pass


def leader_pass(app: App) -> int:
    term = app.store.fleet.leader_acquire(LEADER_NAME, "test-leader", 3600)
    assert term is not None
    return run_pass(app.runtime, "test-leader", term)


def _insert_not_due(app: App, db: dict[str, str], count: int) -> None:
    """``count`` stored schedules whose cursor is a year away, written in one statement."""
    cols = ("name, cron, tz, task, args, queue, max_attempts, catchup, catchup_cap, overlap, "
            "definition_hash, next_fire_at, created_at, updated_at")
    if app.store.engine == "sqlite":
        at = (T0 + timedelta(days=365)).timestamp()
        conn = sqlite3.connect(db["dsn"].removeprefix("sqlite:///"))
        with conn:
            conn.execute(
                f"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
                f"INSERT INTO schedules ({cols}) SELECT 'idle-' || i, '0 0 1 1 *', 'UTC', "
                f"'noop', '{{}}', 'default', 20, 'latest', 100, 'skip', 'x', ?, ?, ? FROM n",
                (count, at, at, at))
        conn.close()
        return
    with psycopg.connect(db["dsn"], autocommit=True) as pg:
        pg.execute(
            f'INSERT INTO "{db["schema"]}".schedules ({cols}) '
            "SELECT 'idle-' || i, '0 0 1 1 *', 'UTC', 'noop', '{}', 'default', 20, 'latest', "
            "100, 'skip', 'x', %(at)s, %(at)s, %(at)s FROM generate_series(1, %(n)s) i",
            {"at": T0 + timedelta(days=365), "n": count})
        pg.execute(f'ANALYZE "{db["schema"]}".schedules')


def _schedules_read_pg(app: App, db: dict[str, str]) -> tuple[int, list[str]]:
    """Rows of ``schedules`` the due query reads (returned or filtered out) and its scans."""
    store: Any = app.store
    with psycopg.connect(db["dsn"]) as conn:
        row = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + store.q["schedules_due"],
                           store._p()).fetchone()
    assert row is not None
    plan = row[0][0]["Plan"]
    read, scans = 0, []

    def walk(node: dict[str, Any]) -> None:
        nonlocal read
        if node.get("Relation Name") == "schedules":
            loops = node.get("Actual Loops", 1)
            read += (node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0)) * loops
            scans.append(node["Node Type"])
        for child in node.get("Plans", []):
            walk(child)

    walk(plan)
    return read, scans


def _vm_steps_sqlite(app: App) -> int:
    """SQLite virtual-machine steps the due query takes (a read of every schedule would
    take at least one per row)."""
    store: Any = app.store
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    store.conn.set_progress_handler(count, 1)
    try:
        store.conn.execute(store.q["schedules_due"], {"now": store._now()}).fetchall()
    finally:
        store.conn.set_progress_handler(None, 1)
    return steps


def test_a_tick_with_100000_not_due_schedules_reads_none_of_them(
        sapp: App, clock: FakeClock, db: dict[str, str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    task = sapp.task(name="noop")(noop)
    for i in range(3):
        sapp.schedule(f"due-{i}", "* * * * *", task)
    reconcile(sapp.runtime)
    _insert_not_due(sapp, db, NOT_DUE)
    clock.set(T0 + timedelta(minutes=1, seconds=1))
    planned: list[str] = []
    real_plan_tick = scheduler.plan_tick  # type: ignore[attr-defined]

    def spy(defn: Any, *args: Any) -> Any:
        planned.append(defn.name)
        return real_plan_tick(defn, *args)

    monkeypatch.setattr(scheduler, "plan_tick", spy)
    assert schedules_of(sapp.store).due() == ["due-0", "due-1", "due-2"]
    if sapp.store.engine == "postgres":
        read, scans = _schedules_read_pg(sapp, db)
        assert "Seq Scan" not in scans, scans
        assert read <= 3, f"the due read touched {read} schedule rows"
    else:
        steps = _vm_steps_sqlite(sapp)
        assert steps < 2_000, f"the due read took {steps} steps for {NOT_DUE} idle schedules"
    assert leader_pass(sapp) == 3
    assert sorted(planned) == ["due-0", "due-1", "due-2"]
    planned.clear()
    assert leader_pass(sapp) == 0  # nothing due: nothing read, nothing planned
    assert planned == []


def test_one_pass_fires_thousands_in_batched_transactions(
        sapp: App, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    task = sapp.task(name="noop")(noop)
    count = 2_500
    for i in range(count):
        sapp.schedule(f"s-{i:05d}", "* * * * *", task, overlap="allow_all")
    # One buffered, one waiting for its active run: released/pending paths in a batch.
    sapp.schedule("buffered", "* * * * *", task, overlap="buffer_one")
    reconcile(sapp.runtime)
    batches: list[int] = []
    real_fire = StoredSchedules.fire

    def counting(store: Any, names: list[str], *args: Any, **kwargs: Any) -> Any:
        batches.append(len(names))
        return real_fire(store, names, *args, **kwargs)

    monkeypatch.setattr(StoredSchedules, "fire", counting)
    clock.set(T0 + timedelta(minutes=1))
    assert leader_pass(sapp) == count + 1
    assert sorted(batches, reverse=True) == [1000, 1000, 501]
    # The next minute: the buffered schedule's run is still active, the others fire again.
    clock.set(T0 + timedelta(minutes=2))
    assert leader_pass(sapp) == count
    jobs = sapp.list_jobs(limit=10_000)
    keys = Counter(j.unique_key for j in jobs)
    assert len(keys) == 2 * count + 1 and set(keys.values()) == {1}
    runs = schedules_of(sapp.store).runs_list("s-00042")
    assert [(r.status, r.kind, r.job_id is not None) for r in runs] == [
        (RunStatus.ENQUEUED, RunKind.CRON, True)] * 2
    assert {r.job_id for r in runs} <= {j.id for j in jobs}
    assert [r.status for r in schedules_of(sapp.store).runs_list("buffered")] == [
        RunStatus.PENDING, RunStatus.ENQUEUED]
    assert leader_pass(sapp) == 0  # nothing new is due


def test_a_late_batch_is_judged_as_of_its_pass_start(
        sapp: App, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pass whose later batches are written after the starting deadline (a long burst)
    still fires them: they were taken on time, by a live leader, at the pass's start."""
    task = sapp.task(name="noop")(noop)
    for i in range(3):
        sapp.schedule(f"s-{i}", "* * * * *", task, starting_deadline=1, catchup="skip")
    reconcile(sapp.runtime)
    monkeypatch.setattr(scheduler, "FIRE_BATCH", 1)
    real_fire = StoredSchedules.fire

    def slow(store: Any, *args: Any, **kwargs: Any) -> Any:
        clock.advance(5)  # each batch takes 5 s: past the deadline and the on-time grace
        return real_fire(store, *args, **kwargs)

    monkeypatch.setattr(StoredSchedules, "fire", slow)
    clock.set(T0 + timedelta(minutes=1))
    assert leader_pass(sapp) == 3
    for i in range(3):
        [run] = schedules_of(sapp.store).runs_list(f"s-{i}")
        assert (run.status, run.kind) == (RunStatus.ENQUEUED, RunKind.CRON)


def test_a_broken_schedule_in_a_batch_does_not_starve_the_others(
        sapp: App, clock: FakeClock, caplog: pytest.LogCaptureFixture) -> None:
    task = sapp.task(name="noop")(noop)
    for i in range(5):
        sapp.schedule(f"s-{i}", "* * * * *", task)
    reconcile(sapp.runtime)
    # A row no definition can be made from (edited by hand, say): its batch fails whole,
    # and the pass fires the batch one schedule per transaction instead.
    store: Any = sapp.store
    if store.engine == "sqlite":
        with store.conn:
            store.conn.execute("UPDATE schedules SET cron = 'not a cron' WHERE name = 's-2'")
    else:
        with store._conn() as c:
            c.execute(f'UPDATE "{sapp.schema}".schedules SET cron = %s WHERE name = %s',
                      ("not a cron", "s-2"))
    clock.set(T0 + timedelta(minutes=1))
    assert leader_pass(sapp) == 4
    assert "firing them one by one" in caplog.text and "schedule s-2" in caplog.text
    assert schedules_of(sapp.store).runs_list("s-2") == []
    assert all(len(schedules_of(sapp.store).runs_list(f"s-{i}")) == 1 for i in (0, 1, 3, 4))


def test_the_common_case_plan_is_the_general_one() -> None:
    """plan_tick decides one on-time occurrence with nothing in its way without the
    general machinery; every snapshot here gets the plan the general path makes."""
    from itertools import product

    from shiftwork.model.schedule_values import Catchup, Overlap
    from shiftwork.schedules.definition import (
        ActiveRun,
        PendingRun,
        ScheduleDef,
        Snapshot,
        _plan_general,
        plan_tick,
    )

    grace = timedelta(seconds=5)
    cursor = T0 + timedelta(minutes=1)
    for overlap, jitter, deadline, cron, lag, active, pending, paused, override in product(
            list(Overlap), (0.0, 7.5), (None, 1.0, 60.0), ("* * * * *", "* * * * * *"),
            (-1.0, 0.0, 0.5, 4.0, 6.0, 130.0), (False, True), (False, True), (False, True),
            (None, Catchup.ALL)):
        if deadline is not None and jitter >= deadline:
            continue
        defn = ScheduleDef(name="n\u00e9\"x", cron=cron, tz="Europe/Paris", task="t",
                           args_json="[]", queue="default", overlap=overlap, jitter=jitter,
                           starting_deadline=deadline)
        snap = Snapshot(cursor=cursor, paused=paused, catchup_override=override,
                        active=(ActiveRun(T0, 41),) if active else (),
                        pending=(PendingRun(T0, RunKind.CRON),) if pending else ())
        now = cursor + timedelta(seconds=lag)
        cron_s = defn.cron_schedule()
        assert plan_tick(defn, cron_s, snap, now, grace) == \
            _plan_general(defn, cron_s, snap, now, grace), (overlap, jitter, deadline, cron,
                                                            lag, active, pending, paused)


def test_an_occurrence_job_meta_is_the_dict_encoded() -> None:
    import json

    from shiftwork.schedules.definition import Decision, ScheduleDef, job_meta, occurrence_job

    for name, tz in (("plain", "UTC"), ("n\u00e9\"\\x/y", "America/New_York")):
        defn = ScheduleDef(name=name, cron="0 9 * * *", tz=tz, task="t", args_json="[1]",
                           queue="default")
        for fire_at in (T0, T0 + timedelta(hours=3, microseconds=5)):
            for kind in RunKind:
                job = occurrence_job(defn, Decision(fire_at, kind, RunStatus.ENQUEUED))
                meta = job_meta(defn, defn.cron_schedule(), fire_at, kind)
                assert job.meta_json == json.dumps(meta, separators=(",", ":"))
                assert json.loads(job.meta_json) == meta


def test_the_leader_wakes_at_the_next_cursor(sapp: App, clock: FakeClock) -> None:
    """Between passes the leader sleeps until the earliest cursor ahead when that comes
    before its pass interval: a burst starts at its instant, not up to an interval late."""
    from shiftwork.schedules.scheduler import WAKE_MARGIN, Scheduler

    assert schedules_of(sapp.store).next_fire_in() is None
    sapp.schedule("every-minute", "* * * * *", sapp.task(name="noop")(noop))
    reconcile(sapp.runtime)
    assert schedules_of(sapp.store).next_fire_in() == 60.0
    clock.set(T0 + timedelta(seconds=59.9))
    term = sapp.store.fleet.leader_acquire(LEADER_NAME, "test-leader", 3600)
    assert term is not None
    service = Scheduler(sapp.runtime, "test-leader", SimpleNamespace(term=term))
    service.tick()
    assert service.next_wait is not None
    assert 0 < service.next_wait <= 0.1 + WAKE_MARGIN + 1e-6
    clock.set(T0 + timedelta(seconds=30))
    service.next_wait = None
    service.tick()
    assert service.next_wait is None  # 30 s ahead: the usual interval
