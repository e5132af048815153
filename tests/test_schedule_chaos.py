"""Real worker processes racing on schedules that fire every second.

The leader is killed (SIGKILL) and its successor paused (SIGSTOP) past its lease; every
occurrence in the window must be enqueued exactly once, none missing.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from shiftwork import App
from shiftwork.model.schedule_values import RunStatus
from shiftwork.schedules.stored import schedules_of
from shiftwork.store.fleet import LEADER_NAME

from .conftest import spawn_worker, wait_for

pytestmark = pytest.mark.chaos


def _leader(app: App) -> tuple[str, int] | None:
    """(owner, term) of the unexpired leader lease, read on the database's clock."""
    return _leader_row(app, app.store.db_now())


def _leader_row(app: App, now: datetime) -> tuple[str, int] | None:
    if app.store.engine == "sqlite":
        row = app.store.conn.execute(  # type: ignore[attr-defined]
            "SELECT owner, term, expires_at FROM leaders WHERE name = ?",
            (LEADER_NAME,)).fetchone()
        if row is None or row[2] <= now.timestamp():
            return None
        return str(row[0]), int(row[1])
    with app.store._conn() as c:  # type: ignore[attr-defined]
        row = c.execute(f'SELECT owner, term, expires_at FROM "{app.schema}".leaders '
                        "WHERE name = %s", (LEADER_NAME,)).fetchone()
    if row is None or row[2] <= now:
        return None
    return str(row[0]), int(row[1])


def _pid(owner: str) -> int:
    return int(owner.split(":")[-2])


def _fired(app: App, name: str) -> list[Any]:
    return schedules_of(app.store).runs_list(name, 100_000)


def _stop_all(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGCONT)
            p.terminate()
    for p in procs:
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)


def test_leader_killed_and_paused_every_second_fires_once(
        make_app: Callable[..., App], engine: str, db: dict[str, str], tmp_path: Path) -> None:
    app = make_app()
    env = {"SHIFTWORK_TEST_SCHEDULES": "race"}
    log = tmp_path / "workers.log"
    procs = [spawn_worker(db, "scheduled", ["sched=4"], env=env, log_path=log)
             for _ in range(3)]
    by_pid = {p.pid: p for p in procs}
    try:
        first = wait_for(lambda: _leader(app), timeout=30, what="a leader")
        wait_for(lambda: len(_fired(app, "every-second")) >= 2, timeout=30, what="fires")
        # Kill the leader outright.
        os.kill(_pid(first[0]), signal.SIGKILL)
        second = wait_for(lambda: (lead := _leader(app)) and lead[0] != first[0] and lead,
                          timeout=30, what="a second leader")
        wait_for(lambda: len(_fired(app, "every-second")) >= 6, timeout=30, what="fires")
        # Pause the new leader past its lease; another takes over; then let it run again.
        # (On SQLite a process paused while holding the write lock blocks every other
        # writer until it resumes; its transaction then fails the commit-time lease check
        # and rolls back. So the takeover during the pause is asserted on PostgreSQL.)
        os.kill(_pid(second[0]), signal.SIGSTOP)
        paused_at = app.store.db_now()
        wait_for(lambda: app.store.db_now() > paused_at + timedelta(seconds=4), timeout=30,
                 interval=0.2, what="the paused leader's lease to lapse")
        if engine == "postgres":
            third = wait_for(lambda: (lead := _leader(app)) and lead[0] not in (
                first[0], second[0]) and lead, timeout=30, what="a third leader")
            assert third[1] > second[1] > first[1]
        os.kill(_pid(second[0]), signal.SIGCONT)
        n = len(_fired(app, "every-second"))
        wait_for(lambda: len(_fired(app, "every-second")) >= n + 3, timeout=30,
                 what="fires after the pause")
        assert by_pid[_pid(first[0])].poll() is not None
    finally:
        _stop_all(procs)
    runs = sorted(_fired(app, "every-second"), key=lambda r: r.fire_at)
    instants = [r.fire_at for r in runs]
    expected = [instants[0] + timedelta(seconds=i)
                for i in range(int((instants[-1] - instants[0]).total_seconds()) + 1)]
    assert instants == expected, "an occurrence is missing"
    assert all(r.status is not RunStatus.MISSED and r.job_id for r in runs)
    jobs = app.list_jobs(limit=100_000)
    keys = Counter(j.unique_key for j in jobs)
    assert len(keys) == len(runs) and set(keys.values()) == {1}, "an occurrence fired twice"
    assert {j.id for j in jobs} == {r.job_id for r in runs}
    lateness = sorted((r.recorded_at - r.fire_at).total_seconds() for r in runs)
    print(f"\n{engine}: {len(runs)} occurrences; enqueued after their fire instant by "
          f"median {lateness[len(lateness) // 2]:.2f}s, max {lateness[-1]:.2f}s "
          "(the max spans the two leader handovers)")


# Real-process downtime runs on PostgreSQL; SQLite's policies are covered by
# test_schedule_policies (keeps the suite under a minute).
@pytest.mark.parametrize("engine", ["postgres"], indirect=True)
def test_downtime_then_each_catchup_policy(make_app: Callable[..., App], engine: str,
                                            db: dict[str, str], tmp_path: Path) -> None:
    app = make_app()
    env = {"SHIFTWORK_TEST_SCHEDULES": "downtime"}
    log = tmp_path / "workers.log"
    names = ("down-skip", "down-latest", "down-all")
    worker = spawn_worker(db, "scheduled", ["sched=4"], env=env, log_path=log)
    try:
        wait_for(lambda: all(len(_fired(app, n)) >= 2 for n in names), timeout=30,
                 what="fires before the downtime")
    finally:
        _stop_all([worker])
    cursor = {n: schedules_of(app.store).get(n).next_fire_at for n in names}
    # All workers down for longer than the on-time grace (2.5 x leader_ttl = 3.75 s).
    down_until = max(c for c in cursor.values() if c) + timedelta(seconds=5)
    wait_for(lambda: app.store.db_now() > down_until, timeout=30, interval=0.2,
             what="the downtime to pass")
    worker = spawn_worker(db, "scheduled", ["sched=4"], env=env, log_path=log)
    try:
        wait_for(lambda: all(len([r for r in _fired(app, n) if r.fire_at > down_until]) >= 1
                             for n in names), timeout=30, what="fires after restart")
    finally:
        _stop_all([worker])

    def gap(name: str) -> dict[str, int]:
        c = cursor[name]
        assert c is not None
        got = Counter(r.status.value if r.status is not RunStatus.SUCCEEDED else "enqueued"
                      for r in _fired(app, name) if c <= r.fire_at <= down_until - timedelta(
                          seconds=4))
        return dict(got)

    # Occurrences at least 4 s old when the worker came back were missed during downtime.
    assert set(gap("down-skip")) == {"missed"}
    assert set(gap("down-all")) == {"enqueued"}
    latest = gap("down-latest")
    assert latest.get("missed", 0) >= 1 and latest.get("enqueued", 0) <= 1
    for name in names:  # no gaps and no duplicates in the record
        instants = sorted(r.fire_at for r in _fired(app, name))
        assert len(instants) == len(set(instants))
        assert all(b - a == timedelta(seconds=1) for a, b in itertools.pairwise(instants))


BURST = 10_000


def _query(app: App, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    """Run ``sql`` (``{s}`` marks the schema, ``?`` the parameters) on the app's database."""
    if app.store.engine == "sqlite":
        conn = app.store.conn  # type: ignore[attr-defined]
        with conn:
            return list(conn.execute(sql.replace("{s}.", ""), [
                p.timestamp() if isinstance(p, datetime) else p for p in params]))
    with app.store._conn() as c:  # type: ignore[attr-defined]
        cur = c.execute(sql.replace("{s}", f'"{app.schema}"').replace("?", "%s"), params)
        return cur.fetchall() if cur.description else []


def test_ten_thousand_due_at_once_fire_once_with_the_leader_killed_mid_burst(
        make_app: Callable[..., App], engine: str, db: dict[str, str], tmp_path: Path) -> None:
    """10,000 schedules due at one near-future instant (their cursors moved there, as a
    top-of-the-hour boundary would); the leader is SIGKILLed once the first batch has
    committed; its successor fires the rest: every occurrence enqueued exactly once."""
    app = make_app()
    env = {"SHIFTWORK_TEST_SCHEDULES": "burst", "SHIFTWORK_TEST_BURST": str(BURST)}
    log = tmp_path / "workers.log"
    procs = [spawn_worker(db, "scheduled", ["sched=1"], env=env, log_path=log)
             for _ in range(3)]
    try:
        wait_for(lambda: _query(app, "SELECT count(*) FROM {s}.schedules WHERE removed_at "
                                     "IS NULL")[0][0] == BURST if _has_schedules(app) else 0,
                 timeout=120, what="the schedules reconciled")
        # The leader's scheduler passes: a canary fires half a second from now.
        _query(app, "UPDATE {s}.schedules SET next_fire_at = ? WHERE name = 'b-00000'",
               (app.store.db_now() + timedelta(seconds=0.5),))
        wait_for(lambda: _query(app, "SELECT count(*) FROM {s}.schedule_runs")[0][0] == 1,
                 timeout=60, what="the canary's fire")
        fire_at = (app.store.db_now() + timedelta(seconds=2)).replace(microsecond=0)
        _query(app, "UPDATE {s}.schedules SET next_fire_at = ? WHERE name <> 'b-00000'",
               (fire_at,))

        def fired() -> int:
            return int(_query(app, "SELECT count(*) FROM {s}.schedule_runs WHERE fire_at = ?",
                              (fire_at,))[0][0])

        leader = wait_for(lambda: _leader(app), timeout=30, what="a leader")
        seen = wait_for(lambda: fired(), timeout=60, interval=0.005, what="the first batch")
        os.kill(_pid(leader[0]), signal.SIGKILL)
        assert seen < BURST - 1, f"the burst ended ({seen}) before the leader was killed"
        wait_for(lambda: (lead := _leader(app)) and lead[0] != leader[0], timeout=30,
                 what="a new leader")
        wait_for(lambda: fired() == BURST - 1, timeout=120, interval=0.2,
                 what="every occurrence")
    finally:
        _stop_all(procs)
    rows = _query(app, "SELECT r.status, r.job_id, j.unique_key FROM {s}.schedule_runs r "
                       "LEFT JOIN {s}.jobs j ON j.id = r.job_id WHERE r.fire_at = ?",
                  (fire_at,))
    assert len(rows) == BURST - 1
    assert {r[0] for r in rows} == {"enqueued"}, Counter(r[0] for r in rows)
    assert all(r[1] is not None and r[2] is not None for r in rows), "a run without its job"
    keys = Counter(r[0] for r in _query(app, "SELECT unique_key FROM {s}.jobs "
                                             "WHERE queue = 'burst'"))
    assert len(keys) == BURST and set(keys.values()) == {1}, "an occurrence fired twice"
    late = sorted(r[0] for r in _query(app, "SELECT recorded_at FROM {s}.schedule_runs "
                                            "WHERE fire_at = ?", (fire_at,)))
    print(f"\n{engine}: leader killed after {seen} of {BURST - 1}; last recorded "
          f"{_seconds(late[-1], fire_at):.2f}s after the fire instant")


def _has_schedules(app: App) -> bool:
    try:
        return bool(schedules_of(app.store).exist())
    except Exception:  # the workers are still creating the tables
        return False


def _seconds(value: Any, since: datetime) -> float:
    if isinstance(value, (int, float)):
        return float(value) - since.timestamp()
    return float((value - since).total_seconds())


def test_runtime_schedule_fires_once_across_a_leader_kill_and_a_restart(
        make_app: Callable[..., App], engine: str, db: dict[str, str], tmp_path: Path) -> None:
    """A schedule added with app.schedules.add: real workers, the leader SIGKILLed, then
    every worker stopped and a fresh one started (its reconcile must keep the schedule)."""
    app = make_app()
    tick = app.task(queue="sched", name="tick")(lambda: None)
    app.schedules.add("rt-every-second", "* * * * * *", tick.call(), catchup="all",
                      catchup_window=120, overlap="allow_all")
    env = {"SHIFTWORK_TEST_SCHEDULES": "runtime"}
    log = tmp_path / "workers.log"
    procs = [spawn_worker(db, "scheduled", ["sched=4"], env=env, log_path=log)
             for _ in range(2)]
    try:
        first = wait_for(lambda: _leader(app), timeout=30, what="a leader")
        wait_for(lambda: len(_fired(app, "rt-every-second")) >= 2, timeout=30, what="fires")
        os.kill(_pid(first[0]), signal.SIGKILL)
        wait_for(lambda: (lead := _leader(app)) and lead[0] != first[0] and lead,
                 timeout=30, what="a second leader")
        n = len(_fired(app, "rt-every-second"))
        wait_for(lambda: len(_fired(app, "rt-every-second")) >= n + 3, timeout=30,
                 what="fires under the new leader")
        _stop_all(procs)
        procs.append(spawn_worker(db, "scheduled", ["sched=4"], env=env, log_path=log))
        n = len(_fired(app, "rt-every-second"))
        wait_for(lambda: len(_fired(app, "rt-every-second")) >= n + 3, timeout=30,
                 what="fires after a restart of every worker")
        info = schedules_of(app.store).get("rt-every-second")
        assert info.origin == "runtime" and info.removed_at is None
        assert schedules_of(app.store).get("code-minutely").origin == "code"
    finally:
        _stop_all(procs)
    runs = sorted(_fired(app, "rt-every-second"), key=lambda r: r.fire_at)
    instants = [r.fire_at for r in runs]
    expected = [instants[0] + timedelta(seconds=i)
                for i in range(int((instants[-1] - instants[0]).total_seconds()) + 1)]
    assert instants == expected, "an occurrence is missing"
    assert all(r.job_id for r in runs)
    # code-minutely enqueues the same task at each minute boundary: count this schedule's
    jobs = [j for j in app.list_jobs(limit=100_000)
            if (j.unique_key or "").startswith("schedule:rt-every-second:")]
    keys = Counter(j.unique_key for j in jobs)
    assert len(keys) == len(runs) and set(keys.values()) == {1}, "an occurrence fired twice"
