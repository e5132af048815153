"""Dedup windows (issue 30): unique_for, unique_states and debounce, on both engines, on
the fake clock; the pruner's rows; bad input. The racing enqueues are in
tests/test_enqueue_transactions.py."""

from __future__ import annotations

import asyncio
import math
import sqlite3
from datetime import timedelta
from typing import Any

import psycopg
import pytest

from shiftwork import App
from shiftwork.core.clock import FakeClock
from shiftwork.core.errors import ConfigurationError
from shiftwork.core.states import JobState


def _claim(app: App) -> list[int]:
    return [j.id for j in app.store.jobs.claim("default", 10, "w1", 30.0)]


def _finish(app: App, job_id: int) -> None:
    from shiftwork.model.outcome import Outcome
    app.store.jobs.complete_many([Outcome(job_id, 1, JobState.SUCCEEDED)])


def _key_rows(app: App) -> int:
    with app.store.transaction() as c:
        table = "unique_keys" if app.dsn.startswith("sqlite") \
            else f'"{app.store.schema}".unique_keys'  # type: ignore[attr-defined]
        row = c.execute(f"SELECT count(*) FROM {table}").fetchone()
    return int(row[0])


def test_unique_for_holds_the_key_whatever_the_state(wapp: App, clock: FakeClock) -> None:
    @wapp.task(unique=True, unique_for=60)
    def report(day: str) -> None: ...

    first = report.enqueue("2026-12-01")
    assert first.created
    again = report.enqueue("2026-12-01")
    assert (again.id, again.created) == (first.id, False)
    assert report.enqueue("2026-12-02").created  # another key
    # run and finished: still held for the rest of the minute
    assert first.id in _claim(wapp)
    _finish(wapp, first.id)
    assert wapp.get_job(first.id).state is JobState.SUCCEEDED
    clock.advance(59)
    assert report.enqueue("2026-12-01").id == first.id
    clock.advance(1.5)
    later = report.enqueue("2026-12-01")
    assert later.created and later.id != first.id
    job = wapp.get_job(later.id)
    assert job.unique_key == first_key(wapp, first.id)
    # the key's row now names the new job: the next minute is its
    assert report.enqueue("2026-12-01").id == later.id


def first_key(app: App, job_id: int) -> str | None:
    return app.get_job(job_id).unique_key


def test_unique_for_with_states_frees_when_the_holder_finishes(wapp: App,
                                                                clock: FakeClock) -> None:
    @wapp.task
    def sync(account: int) -> None: ...

    opts: dict[str, Any] = {"key": "acct-1", "unique_for": 300,
                            "unique_states": ["scheduled", "available", "running",
                                              "retrying"]}
    a = sync.using(**opts).enqueue(1)
    assert sync.using(**opts).enqueue(1).id == a.id
    _claim(wapp)
    _finish(wapp, a.id)
    b = sync.using(**opts).enqueue(1)  # inside the window, but the holder is done
    assert b.created and b.id != a.id
    clock.advance(301)
    c = sync.using(**opts).enqueue(1)  # still waiting, but the window is over
    assert c.created and c.id != b.id


def test_unique_states_lets_one_wait_while_one_runs(wapp: App) -> None:
    @wapp.task(unique=True, unique_states=("scheduled", "available", "retrying"))
    def rebuild(index: str) -> None: ...

    a = rebuild.enqueue("search")
    assert rebuild.enqueue("search").id == a.id
    assert _claim(wapp) == [a.id]  # running: no longer holds
    b = rebuild.enqueue("search")
    assert b.created and b.id != a.id
    assert rebuild.enqueue("search").id == b.id
    assert rebuild.enqueue("other").created
    _finish(wapp, a.id)
    assert rebuild.enqueue("search").id == b.id
    assert wapp.get_job(b.id).unique_key == wapp.get_job(a.id).unique_key
    key = wapp.get_job(b.id).unique_key
    assert key is not None and key.startswith(rebuild.name)
    # the key filter finds the key's holder (the job its row names)
    assert [j.id for j in wapp.find_jobs(unique_key=key)] == [b.id]


def test_debounce_replaces_the_waiting_jobs_arguments_and_moves_it(
        wapp: App, clock: FakeClock) -> None:
    @wapp.task(unique=("user",), debounce=10)
    def notify(user: int, count: int) -> None: ...

    start = clock.now()
    a = notify.enqueue(7, 1)
    job = wapp.get_job(a.id)
    assert job.state is JobState.SCHEDULED and job.run_at == start + timedelta(seconds=10)
    clock.advance(6)
    b = notify.enqueue(7, 2)
    assert (b.id, b.created) == (a.id, False)
    job = wapp.get_job(a.id)
    assert job.args == [7, 2]
    assert job.run_at == start + timedelta(seconds=16)
    assert _claim(wapp) == []  # not due: the window moved
    clock.advance(10)
    assert _claim(wapp) == [a.id]
    # it runs: a new enqueue is a new job, debounced in turn
    c = notify.enqueue(7, 3)
    assert c.created and c.id != a.id
    assert notify.enqueue(7, 4).id == c.id
    assert wapp.get_job(c.id).args == [7, 4]
    assert wapp.get_job(a.id).args == [7, 2]


def test_bulk_enqueue_settles_each_key_in_order(wapp: App) -> None:
    @wapp.task(unique=("n",), unique_for=60)
    def work(n: int, extra: int = 0) -> None: ...

    @wapp.task
    def plain(n: int) -> None: ...

    results = wapp.enqueue_many([work.call(1), plain.call(1), work.call(1, 5), work.call(2),
                                 plain.call(2), work.call(2, 9)])
    assert [r.created for r in results] == [True, True, False, True, True, False]
    assert results[0].id == results[2].id and results[3].id == results[5].id
    assert len({r.id for r in results}) == 4
    again = work.enqueue_many([(1,), (2,), (3,)])
    assert [r.id for r in again[:2]] == [results[0].id, results[3].id]
    assert [r.created for r in again] == [False, False, True]
    assert len(wapp.list_jobs()) == 5


def test_enqueue_async(wapp: App) -> None:
    @wapp.task(unique=True, unique_for=60)
    def ping(n: int) -> None: ...

    async def main() -> list[Any]:
        a = await ping.enqueue_async(1)
        b = await ping.enqueue_async(1)
        c = await ping.using(debounce=5, key="k").enqueue_async(2)
        d = await ping.using(debounce=5, key="k").enqueue_async(3)
        return [a, b, c, d]

    a, b, c, d = asyncio.run(main())
    assert a.created and (b.id, b.created) == (a.id, False)
    assert c.created and (d.id, d.created) == (c.id, False)
    assert wapp.get_job(c.id).args == [3]


def test_a_rolled_back_enqueue_does_not_take_the_key(db: dict[str, str], wapp: App) -> None:
    @wapp.task(unique=True, unique_for=600)
    def charge(order: int) -> None: ...

    if db["dsn"].startswith("sqlite"):
        conn: Any = sqlite3.connect(db["dsn"].split(":///", 1)[1], isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        charge.using(conn=conn).enqueue(1)
        conn.execute("ROLLBACK")
        conn.execute("BEGIN IMMEDIATE")
        inside = charge.using(conn=conn).enqueue(1)
        assert charge.using(conn=conn).enqueue(1).id == inside.id
        conn.execute("COMMIT")
    else:
        with psycopg.connect(db["dsn"]) as conn:
            with pytest.raises(RuntimeError), conn.transaction():
                charge.using(conn=conn).enqueue(1)
                raise RuntimeError("rolled back")
            with conn.transaction():
                inside = charge.using(conn=conn).enqueue(1)
                assert charge.using(conn=conn).enqueue(1).id == inside.id
                assert wapp.list_jobs() == []  # not visible before the commit
    assert inside.created
    assert [j.id for j in wapp.list_jobs()] == [inside.id]
    assert charge.enqueue(1).id == inside.id


def test_pruner_deletes_only_rows_that_no_longer_hold(wapp: App, clock: FakeClock) -> None:
    @wapp.task(unique=True, unique_for=60)
    def windowed(n: int) -> None: ...

    @wapp.task(unique=True, unique_states=["scheduled", "available"])
    def stated(n: int) -> None: ...

    windowed.enqueue(1)
    s1 = stated.enqueue(1)
    stated.enqueue(2)
    assert wapp.store.jobs.unique_keys_prune() == 0
    clock.advance(61)
    assert _claim(wapp)  # all three running: stated's keys free, not final yet
    assert wapp.store.jobs.unique_keys_prune() == 1  # the expired window
    _finish(wapp, s1.id)
    assert wapp.store.jobs.unique_keys_prune() == 1  # s1's row: its job is done
    assert _key_rows(wapp) == 1
    assert wapp.store.jobs.unique_keys_prune() == 0


@pytest.mark.parametrize("options, message", [
    ({"unique_for": -1}, "unique_for must be > 0"),
    ({"unique_for": 0}, "unique_for must be > 0"),
    ({"unique_for": math.inf}, "finite"),
    ({"unique_for": math.nan}, "finite"),
    ({"unique_for": True}, "must be seconds"),
    ({"debounce": -5}, "debounce must be > 0"),
    ({"debounce": math.inf}, "finite"),
    ({"debounce": 5, "unique_for": 60}, "debounce cannot be combined with unique_for"),
    ({"debounce": 5, "unique_states": ["scheduled"]},
     "debounce cannot be combined with unique_states"),
    ({"unique_states": ["waiting"]}, "unknown states ['waiting']"),
    ({"unique_states": "scheduled"}, "must be a list of state names"),
    ({"unique_states": []}, "unique_states is empty"),
])
def test_bad_options_are_refused(app: App, options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message.replace("[", r"\[")
                       .replace("]", r"\]")):
        app.task(name="t_decorated", unique=True, **options)(lambda n: None)

    @app.task(name=f"t_{abs(hash(repr(options)))}")
    def t(n: int) -> None: ...
    with pytest.raises(ConfigurationError, match=message.replace("[", r"\[")
                       .replace("]", r"\]")):
        t.using(key="k", **options).enqueue(1)


def test_a_window_needs_a_key_and_debounce_no_delay(app: App) -> None:
    with pytest.raises(ConfigurationError, match="need a unique key"):
        app.task(name="keyless", unique_for=60)(lambda n: None)

    @app.task
    def t(n: int) -> None: ...
    with pytest.raises(ConfigurationError, match="need a unique key"):
        t.using(unique_for=60).enqueue(1)
    with pytest.raises(ConfigurationError, match="debounce cannot be combined with a delay"):
        t.using(key="k", debounce=5, delay=10).enqueue(1)
    # the default states, given: the partial unique index, as without them
    t.using(key="k", unique_states=["running", "scheduled", "available", "retrying", "held"]
            ).enqueue(1)
    assert app.list_jobs()[0].meta == {}


def _race(fn: Any, n: int = 8) -> list[Any]:
    """``fn`` on ``n`` threads at once (a barrier lines them up)."""
    import threading
    barrier = threading.Barrier(n)
    out: list[Any] = []
    lock = threading.Lock()

    def run() -> None:
        barrier.wait()
        r = fn()
        with lock:
            out.append(r)

    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return out


def test_a_freed_key_is_taken_by_one_of_the_racers(wapp: App, clock: FakeClock) -> None:
    @wapp.task(unique=True, unique_states=("scheduled", "available", "retrying"))
    def rebuild(index: str) -> None: ...

    @wapp.task(unique=True, unique_for=60)
    def report(day: str) -> None: ...

    a = rebuild.enqueue("search")
    _claim(wapp)  # running: the key is free, and eight enqueues race for it
    results = _race(lambda: rebuild.enqueue("search"))
    assert sum(r.created for r in results) == 1
    assert len({r.id for r in results}) == 1 and results[0].id != a.id
    first = report.enqueue("d")
    clock.advance(61)  # expired: again one new job
    results = _race(lambda: report.enqueue_many([("d",), ("d",)]))
    assert sum(r.created for pair in results for r in pair) == 1
    assert len({r.id for pair in results for r in pair} - {first.id}) == 1


def test_debounce_on_a_key_held_by_a_running_job_enqueues_a_new_one(wapp: App) -> None:
    @wapp.task
    def t(n: int) -> None: ...

    a = t.using(key="k", unique_for=600).enqueue(1)
    assert _claim(wapp) == [a.id]  # held by its window, but running: not debounced
    b = t.using(key="k", debounce=5).enqueue(2)
    assert b.created and b.id != a.id
    assert wapp.get_job(a.id).args == [1]
    c = t.using(key="k", debounce=5).enqueue(3)  # the key is b's now, debounced
    assert c.id == b.id and wapp.get_job(b.id).args == [3]


def test_a_held_job_keeps_its_state_bound_key_and_takes_a_debounce(wapp: App) -> None:
    from shiftwork.worker.maintenance.pruner import Pruner

    @wapp.task
    def t(n: int) -> None: ...

    a = t.using(key="s", unique_states=["scheduled", "available", "held"]).enqueue(1)
    wapp.hold(a.id)
    Pruner(wapp.runtime).prune()  # held: its row still holds the key
    assert _key_rows(wapp) == 1
    again = t.using(key="s", unique_states=["scheduled", "available", "held"]).enqueue(2)
    assert (again.id, again.created) == (a.id, False)
    d = t.using(key="d", debounce=5).enqueue(1)
    wapp.hold(d.id)
    e = t.using(key="d", debounce=5).enqueue(7)  # the held job takes the new arguments
    assert (e.id, e.created) == (d.id, False)
    job = wapp.get_job(d.id)
    assert job.args == [7] and job.state is JobState.HELD


def test_the_leaders_pruner_prunes_unique_keys(wapp: App, clock: FakeClock) -> None:
    from shiftwork.worker.maintenance.pruner import Pruner

    @wapp.task(unique=True, unique_for=60)
    def windowed(n: int) -> None: ...

    windowed.enqueue(1)
    Pruner(wapp.runtime).prune()
    assert _key_rows(wapp) == 1
    clock.advance(61)
    Pruner(wapp.runtime).prune()
    assert _key_rows(wapp) == 0
    assert windowed.enqueue(1).created


def test_a_group_refuses_debounce_and_takes_windowed_members(app: App) -> None:
    from shiftwork.core.errors import DependencyError

    @app.task
    def member(n: int) -> int:
        return n

    with pytest.raises(DependencyError, match="debounce cannot be used in a group"):
        app.group([member.using(key="d", debounce=5).call(1)])
    app.group([member.using(key="w1", unique_for=60).call(1),
               member.using(key="w2", unique_for=60).call(2)])
    assert len(app.list_jobs()) == 2
    with pytest.raises(DependencyError, match="unique key of a group member"):
        app.group([member.using(key="w1", unique_for=60).call(1)])
    assert len(app.list_jobs()) == 2
