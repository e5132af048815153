"""The fast paths: COPY / executemany enqueue and batched completion keep every guarantee."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from shiftwork import App, FakeClock, JobState
from shiftwork.model.outcome import Outcome

TRICKY = ["plain", "back\\slash", 'quote"d', "tab\there", "new\nline", "ünïcødé ✓", "\\N",
          "", "\\\\double"]


def test_bulk_enqueue_round_trips_arguments_and_ids_in_order(app: App) -> None:
    @app.task
    def echo(text: str, n: int, extra: dict | None = None) -> None: ...  # type: ignore[type-arg]

    calls = [(TRICKY[i % len(TRICKY)], i, {"k": TRICKY[-i % len(TRICKY)]}) for i in range(450)]
    results = echo.enqueue_many(calls)
    assert len(results) == 450 and all(r.created for r in results)
    assert [r.id for r in results] == sorted(r.id for r in results)
    assert len({r.id for r in results}) == 450
    for r, call in zip(results[:: 37], calls[:: 37], strict=True):
        job = app.get_job(r.id)
        assert (job.args, job.state, job.attempt) == (list(call), JobState.AVAILABLE, 0)


def test_bulk_enqueue_with_delays_and_options(make_app) -> None:  # type: ignore[no-untyped-def]
    clock = FakeClock(datetime.now(UTC))
    app = make_app(clock=clock)

    @app.task(queue="q1", max_attempts=3, timeout=2.5)
    def work(n: int) -> None: ...

    now_jobs = [work.call(i) for i in range(300)]
    later_jobs = [work.using(delay=60, priority=7, meta={"who": "me"}).call(i) for i in range(300)]
    results = app.enqueue_many(now_jobs + later_jobs)
    first, last = app.get_job(results[0].id), app.get_job(results[-1].id)
    assert (first.state, first.max_attempts, first.timeout, first.priority) == (
        JobState.AVAILABLE, 3, 2.5, 0)
    assert (last.state, last.priority, last.meta) == (JobState.SCHEDULED, 7, {"who": "me"})
    assert last.run_at == clock.now() + timedelta(seconds=60)
    assert first.created_at == clock.now()
    claimed = app.store.jobs.claim("q1", 1000, "w", 30)
    assert len(claimed) == 300
    clock.advance(61)
    assert len(app.store.jobs.claim("q1", 1000, "w", 30)) == 300


def test_bulk_enqueue_mixing_tasks_and_options_keeps_each_jobs_row(app: App) -> None:
    """SQLite writes a stretch of jobs that differ only in their arguments as one
    statement with the shared columns bound once; a mix of many stretches goes row by
    row. Either way each job keeps its own task, queue, priority and arguments, in order."""
    @app.task(queue="qa")
    def a(n: int) -> None: ...

    @app.task(queue="qb", max_attempts=2)
    def b(n: int) -> None: ...

    mixed = [(a if i % 2 else b).using(priority=i % 3).call(i) for i in range(40)]
    stretches = [a.call(i) for i in range(30)] + [b.call(i) for i in range(30)]
    for requests in (mixed, stretches):
        results = app.enqueue_many(requests)
        assert [r.id for r in results] == sorted(r.id for r in results)
        for r, req in zip(results, requests, strict=True):
            job = app.get_job(r.id)
            assert (job.task, job.queue, job.args) == (req.task.name, req.task.options.queue,
                                                       list(req.args))
            assert job.priority == (req.options.priority or 0)
            assert job.max_attempts == req.task.options.max_attempts


def test_batched_completion_is_fenced_per_attempt(app: App) -> None:
    @app.task
    def noop(n: int) -> None: ...

    noop.enqueue_many([(i,) for i in range(5)])
    claimed = app.store.jobs.claim("default", 10, "w", 30)
    assert len(claimed) == 5
    good = [Outcome(c.id, c.attempt, JobState.SUCCEEDED) for c in claimed[:3]]
    stale = [Outcome(c.id, c.attempt + 1, JobState.SUCCEEDED) for c in claimed[3:]]
    done = app.store.jobs.complete_many(good + stale + [Outcome(10**9, 1, JobState.SUCCEEDED)])
    assert done == {c.id for c in claimed[:3]}
    assert [app.get_job(c.id).state for c in claimed] == [JobState.SUCCEEDED] * 3 + [
        JobState.RUNNING] * 2
    # completing again is rejected: the job is no longer running
    assert app.store.jobs.complete_many(good) == set()


def test_a_bad_job_in_a_streamed_bulk_enqueue_inserts_nothing(app: App) -> None:
    """The bulk path validates each job as it streams it; one bad job aborts them all."""
    import pytest

    from shiftwork.core.errors import PayloadError

    @app.task
    def measure(value: float) -> None: ...

    calls: list[tuple[float]] = [(float(i),) for i in range(1000)]
    calls[700] = (float("nan"),)
    with pytest.raises(PayloadError, match=r"argument 'value'.*NaN"):
        measure.enqueue_many(calls)
    calls[700] = (1.0,)
    calls[900] = ("extra", 2)  # type: ignore[assignment]
    with pytest.raises(PayloadError, match="arguments do not match"):
        measure.enqueue_many(calls)
    assert app.list_jobs(limit=10) == []


def test_bulk_enqueue_of_keyword_calls_and_a_generator(app: App) -> None:
    @app.task
    def greet(name: str, times: int = 1) -> None: ...

    by_keyword = greet.enqueue_many([{"name": f"n{i}", "times": i} for i in range(250)])
    from_generator = greet.enqueue_many((f"g{i}",) for i in range(250))
    assert len(by_keyword) == len(from_generator) == 250
    assert app.get_job(by_keyword[249].id).kwargs == {"name": "n249", "times": 249}
    assert app.get_job(from_generator[0].id).args == ["g0"]
    result = from_generator[0]
    assert (result.id, result.created) == tuple(result)


def test_sqlite_writer_waits_for_the_write_lock_then_gives_up_naming_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Our own wait for SQLite's write lock: it gets the lock once it is free, and past
    the busy timeout it fails with the engine's reason, nothing half-written."""
    import sqlite3
    import threading

    import pytest

    from shiftwork.core.errors import StorageError
    from shiftwork.store.sqlite.store import SQLiteStore

    path = tmp_path / "jobs.db"
    store = SQLiteStore(str(path), busy_timeout=0.3)
    store.migrate()
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    with pytest.raises(StorageError, match="database is locked"):
        store.jobs.prune(0, 0)
    releaser = threading.Timer(0.1, lambda: other.execute("COMMIT"))
    releaser.start()
    assert store.jobs.prune(0, 0) == 0  # waited for the lock, then ran
    releaser.join()
    other.close()
    store.close()
