"""Batch tasks (docs/batching.md): one call per batch of jobs, each job its own outcome,
lease and attempt; on both engines with a real worker (and real processes for the kill)."""

from __future__ import annotations

import asyncio
import math
import signal
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from shiftwork import (
    App,
    Backoff,
    Batch,
    BatchItem,
    ConfigurationError,
    FakeClock,
    JobCancelled,
    JobContext,
    JobState,
)
from shiftwork.worker import Worker

from .conftest import PG_DSN, imported_app, running_worker, spawn_worker, wait_for
from .test_chaos import stop


def states(app: App, ids: list[int]) -> list[JobState]:
    return [app.get_job(i).state for i in ids]


def succeeded(app: App) -> int:
    return sum(s.succeeded for s in app.queue_stats())


def test_250_jobs_of_size_100_are_three_calls(make_app: Callable[..., App],
                                              clock: FakeClock) -> None:
    app = make_app(clock=clock)
    calls: list[int] = []

    @app.task(queue="bulk", batch=Batch(size=100, timeout=1.0))
    def double(items: list[BatchItem]) -> list[int]:
        calls.append(len(items))
        return [item.args[0] * 2 for item in items]

    ids = [r.id for r in double.enqueue_many([(i,) for i in range(250)])]
    with running_worker(app, {"bulk": 1}) as worker:
        # Two full batches go at once; the last 50 wait for the timeout, which only the
        # fake clock passes.
        wait_for(lambda: succeeded(app) == 200, what="two full batches")
        wait_for(lambda: worker.batcher.pending() == 50, what="the last 50 claimed")
        assert calls == [100, 100]
        clock.advance(1.0)
        wait_for(lambda: succeeded(app) == 250, what="the partial batch")
    assert calls == [100, 100, 50]
    assert [app.get_job(i).result for i in ids[:3]] == [0, 2, 4]
    assert {app.get_job(i).attempt for i in ids} == {1}


def test_a_partial_batch_is_flushed_after_its_timeout(make_app: Callable[..., App],
                                                     clock: FakeClock) -> None:
    app = make_app(clock=clock)
    calls: list[list[str]] = []

    @app.task(queue="bulk", batch=Batch(size=100, timeout=1.0))
    def names(items: list[BatchItem]) -> None:
        calls.append([item.kwargs["name"] for item in items])

    for name in "abcde":
        names.enqueue(name=name)
    with running_worker(app, {"bulk": 2}) as worker:
        wait_for(lambda: worker.batcher.pending() == 5, what="5 jobs claimed and held")
        assert calls == []  # the clock has not moved: the batch waits
        assert {j.state for j in app.list_jobs()} == {JobState.RUNNING}
        clock.advance(0.5)
        worker.batcher.flush_due()
        assert calls == []
        clock.advance(0.5)
        wait_for(lambda: succeeded(app) == 5, what="the flushed batch")
    assert calls == [list("abcde")]
    assert all(j.result is None for j in app.list_jobs())


def test_timeout_zero_calls_with_what_one_claim_brought(make_app: Callable[..., App],
                                                       clock: FakeClock) -> None:
    app = make_app(clock=clock)
    calls: list[int] = []

    @app.task(queue="bulk", batch=Batch(size=100, timeout=0))
    def take(items: list[BatchItem]) -> None:
        calls.append(len(items))

    take.enqueue_many([(i,) for i in range(7)])
    with running_worker(app, {"bulk": 1}):
        wait_for(lambda: succeeded(app) == 7, what="the claim's batch")
    assert calls == [7]


def test_one_failing_item_retries_alone(make_app: Callable[..., App],
                                        clock: FakeClock) -> None:
    app = make_app(clock=clock)
    calls: list[list[tuple[int, int]]] = []

    @app.task(queue="bulk", batch=Batch(size=10, timeout=0), max_attempts=3,
              retry=Backoff(initial=5.0, maximum=5.0, jitter=False))
    def check(items: list[BatchItem]) -> list[Any]:
        calls.append([(item.args[0], item.attempt) for item in items])
        return [ValueError(f"bad {item.args[0]}") if item.args[0] == 3 and item.attempt == 1
                else item.args[0] * 10 for item in items]

    ids = [r.id for r in check.enqueue_many([(i,) for i in range(5)])]
    with running_worker(app, {"bulk": 1}):
        wait_for(lambda: succeeded(app) == 4, what="the four good items")
        bad = app.get_job(ids[3])
        assert bad.state is JobState.RETRYING and bad.attempt == 1
        assert bad.errors[-1]["message"] == "bad 3" and bad.errors[-1]["retry_in"] == 5.0
        clock.advance(5.0)
        wait_for(lambda: succeeded(app) == 5, what="the retried item")
    assert calls == [[(0, 1), (1, 1), (2, 1), (3, 1), (4, 1)], [(3, 2)]]
    jobs = [app.get_job(i) for i in ids]
    assert [j.attempt for j in jobs] == [1, 1, 1, 2, 1]
    assert [j.result for j in jobs] == [0, 10, 20, 30, 40]


def test_a_raise_fails_the_whole_batch_each_with_its_own_attempt(
        make_app: Callable[..., App], clock: FakeClock) -> None:
    app = make_app(clock=clock)
    calls: list[int] = []

    @app.task(queue="bulk", batch=Batch(size=10, timeout=0), max_attempts=2,
              retry=Backoff(initial=1.0, maximum=1.0, jitter=False))
    def flaky(items: list[BatchItem]) -> list[int]:
        calls.append(len(items))
        if len(calls) == 1:
            raise ConnectionError("the service is down")
        return [1 for _ in items]

    ids = [r.id for r in flaky.enqueue_many([(i,) for i in range(3)])]
    with running_worker(app, {"bulk": 1}):
        wait_for(lambda: set(states(app, ids)) == {JobState.RETRYING}, what="all retrying")
        assert all(app.get_job(i).errors[-1]["type"] == "ConnectionError" for i in ids)
        clock.advance(1.0)
        wait_for(lambda: succeeded(app) == 3, what="the batch again")
    assert calls == [3, 3]
    assert {app.get_job(i).attempt for i in ids} == {2}


def test_a_wrong_number_of_results_fails_every_item(make_app: Callable[..., App]) -> None:
    app = make_app()

    @app.task(queue="bulk", batch=Batch(size=10, timeout=0), max_attempts=1)
    def short(items: list[BatchItem]) -> list[int]:
        return [1]

    ids = [r.id for r in short.enqueue_many([(i,) for i in range(2)])]
    with running_worker(app, {"bulk": 1}):
        wait_for(lambda: set(states(app, ids)) == {JobState.DEAD}, what="both dead")
    assert "returned 1 results for 2 items" in app.get_job(ids[0]).errors[-1]["message"]


def _expire_lease(app: App, db: dict[str, str], job_id: int) -> None:
    """Make one job's lease look expired (as a worker that stopped renewing it would)."""
    if app.store.engine == "sqlite":
        with sqlite3.connect(db["dsn"].split(":///", 1)[1], isolation_level=None) as c:
            c.execute("UPDATE jobs SET lease_expires_at = 0 WHERE id = ?", (job_id,))
    else:
        with psycopg.connect(PG_DSN, autocommit=True) as c:
            c.execute(f'UPDATE "{db["schema"]}".jobs SET lease_expires_at = '
                      "now() - interval '1 day' WHERE id = %s", (job_id,))


def test_leases_are_renewed_per_job_and_completions_fenced_per_job(
        make_app: Callable[..., App], clock: FakeClock, db: dict[str, str]) -> None:
    app = make_app(clock=clock)
    release = threading.Event()
    calls: list[list[tuple[int, int]]] = []
    stale: list[int] = []
    app.runtime.events.subscribe(
        lambda name, fields: stale.append(fields["job_id"]) if name == "job.stale_write"
        else None)

    @app.task(queue="bulk", batch=Batch(size=3, timeout=0))
    def hold(items: list[BatchItem]) -> list[str]:
        calls.append([(item.job_id, item.attempt) for item in items])
        if items[0].attempt == 1:
            release.wait(30)
        return [f"attempt {item.attempt}" for item in items]

    ids = [r.id for r in hold.enqueue_many([(i,) for i in range(3)])]
    with running_worker(app, {"bulk": 2}):
        wait_for(lambda: calls, what="the call began")
        first = {i: app.get_job(i).lease_expires_at for i in ids}
        clock.advance(1.0)  # each job's lease is renewed by the heartbeat while it runs
        wait_for(lambda: all(app.get_job(i).lease_expires_at > first[i]  # type: ignore[operator]
                             for i in ids), what="every job's lease renewed")
        # One job is taken from this worker (its lease lost, rescued, claimed again):
        # the batch's write for it is refused, the others' are not.
        stolen = ids[1]

        def rescued() -> bool:
            _expire_lease(app, db, stolen)
            return bool(app.store.jobs.rescue())

        wait_for(rescued, what="the stolen job rescued")
        wait_for(lambda: app.get_job(stolen).state is JobState.SUCCEEDED,
                 what="the stolen job re-run")
        release.set()
        wait_for(lambda: succeeded(app) == 3, what="the batch's writes")
        wait_for(lambda: stale, what="the stale write seen")
    assert calls == [[(i, 1) for i in ids], [(stolen, 2)]]
    assert stale == [stolen]
    assert [app.get_job(i).result for i in ids] == ["attempt 1", "attempt 2", "attempt 1"]


def test_jobs_cancelled_while_waiting_are_left_out(make_app: Callable[..., App],
                                                  clock: FakeClock) -> None:
    app = make_app(clock=clock)
    calls: list[list[int]] = []

    @app.task(queue="bulk", batch=Batch(size=100, timeout=1.0))
    def keep(items: list[BatchItem]) -> None:
        calls.append([item.args[0] for item in items])

    ids = [r.id for r in keep.enqueue_many([(i,) for i in range(3)])]
    with running_worker(app, {"bulk": 1}) as worker:
        wait_for(lambda: worker.batcher.pending() == 3, what="held")
        app.cancel_job(ids[0])
        wait_for(lambda: all(r.ctx.cancelled for r in worker.runs_snapshot()
                             if r.job.id == ids[0]), what="the cancel heard")
        clock.advance(1.0)
        wait_for(lambda: succeeded(app) == 2, what="the others")
    assert calls == [[1, 2]]
    assert app.get_job(ids[0]).state is JobState.CANCELLED


def test_a_job_cancelled_during_the_call_is_told_and_may_end_cancelled(
        make_app: Callable[..., App]) -> None:
    app = make_app()
    started = threading.Event()
    seen: list[bool] = []

    @app.task(queue="bulk", batch=Batch(size=2, timeout=0))
    def watch(items: list[BatchItem]) -> list[Any]:
        started.set()
        wait_for(lambda: items[0].ctx.cancelled, what="the cancel heard in the call")
        seen.extend(item.ctx.cancelled for item in items)
        return [JobCancelled("stopped") if item.ctx.cancelled else "done" for item in items]

    ids = [r.id for r in watch.enqueue_many([(i,) for i in range(2)])]
    with running_worker(app, {"bulk": 1}):
        assert started.wait(20)
        app.cancel_job(ids[0])
        wait_for(lambda: succeeded(app) == 1, what="the other job")
    assert seen == [True, False]
    assert app.get_job(ids[0]).state is JobState.CANCELLED
    assert app.get_job(ids[1]).result == "done"


def test_at_shutdown_jobs_waiting_for_their_batch_go_back_at_once(
        make_app: Callable[..., App], clock: FakeClock) -> None:
    app = make_app(clock=clock)
    calls: list[int] = []

    @app.task(queue="bulk", batch=Batch(size=100, timeout=1.0))
    def never(items: list[BatchItem]) -> None:
        calls.append(len(items))

    ids = [r.id for r in never.enqueue_many([(i,) for i in range(3)])]
    with running_worker(app, {"bulk": 1}) as worker:
        wait_for(lambda: worker.batcher.pending() == 3, what="held")
    assert calls == []
    jobs = [app.get_job(i) for i in ids]
    assert {j.state for j in jobs} == {JobState.AVAILABLE}
    assert {j.counted_attempt for j in jobs} == {0}  # the attempt did not count


def test_an_async_batch_task_runs_on_the_event_loop(make_app: Callable[..., App],
                                                   clock: FakeClock) -> None:
    app = make_app(clock=clock)
    calls: list[int] = []

    @app.task(queue="bulk", batch=Batch(size=4, timeout=0), max_attempts=2,
              retry=Backoff(initial=1.0, maximum=1.0, jitter=False))
    async def fetch(items: list[BatchItem]) -> list[Any]:
        await asyncio.sleep(0)
        calls.append(len(items))
        return [KeyError(item.args[0]) if item.args[0] == 0 and item.attempt == 1
                else f"got {item.args[0]}" for item in items]

    ids = [r.id for r in fetch.enqueue_many([(i,) for i in range(8)])]
    with running_worker(app, {"bulk": 1}):
        wait_for(lambda: succeeded(app) == 7, what="seven of eight")
        clock.advance(1.0)
        wait_for(lambda: succeeded(app) == 8, what="the retried one")
    assert calls == [4, 4, 1]
    assert [app.get_job(i).result for i in ids] == [f"got {i}" for i in range(8)]
    assert app.get_job(ids[0]).attempt == 2


def test_drain_runs_a_batch_tasks_job_as_a_batch_of_one(make_app: Callable[..., App]) -> None:
    from shiftwork.testing import drain

    app = make_app()

    @app.task(queue="bulk", batch=Batch(size=10))
    def upper(items: list[BatchItem]) -> list[str]:
        return [item.args[0].upper() for item in items]

    @app.task(queue="bulk2", batch=Batch(size=10))
    async def lower(items: list[BatchItem]) -> list[str]:
        return [item.args[0].lower() for item in items]

    job, other = upper.enqueue("x"), lower.enqueue("Y")
    assert drain(app).succeeded == 2
    assert app.get_job(job.id).result == "X" and app.get_job(other.id).result == "y"


def test_kill9_mid_batch_rescues_every_job(db: dict[str, str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    with imported_app(monkeypatch, "batching", db["dsn"], db["schema"]) as module:
        module.create_calls_table()
        app = module.app
        total = 30
        module.collect.enqueue_many([(i,) for i in range(total)])
        a = spawn_worker(db, "batching", ["batched=2"], env={"BATCH_TEST_HANG": "1"})
        b = None
        try:
            wait_for(lambda: len(module.calls()) >= 20, timeout=60, what="two calls began")
            a.send_signal(signal.SIGKILL)
            a.wait(10)
            b = spawn_worker(db, "batching", ["batched=2"])
            wait_for(lambda: succeeded(app) == total, timeout=120, what="all jobs done")
        finally:
            stop(a)
            if b is not None:
                stop(b)
        jobs = app.list_jobs(limit=total)
        assert {j.state for j in jobs} == {JobState.SUCCEEDED}
        assert sorted(j.result for j in jobs) == list(range(total))
        killed = {job_id for job_id, attempt, pid, _ in module.calls() if pid == a.pid}
        assert len(killed) >= 20
        for j in jobs:  # a job in the killed worker's calls came back from its lost lease
            if j.id in killed:
                assert any(e["kind"] == "lease_expired" for e in j.errors), j
        assert b is not None  # the second worker ran every job, in calls of at most 10
        again = [(job_id, size) for job_id, _, pid, size in module.calls() if pid == b.pid]
        assert {job_id for job_id, _ in again} == {j.id for j in jobs}
        assert all(1 <= size <= 10 for _, size in again)


# -- validation ----------------------------------------------------------------------


@pytest.fixture
def plain_app(tmp_path: Path) -> App:
    return App(f"sqlite:///{tmp_path / 'jobs.db'}")


def items_fn(items: list[BatchItem]) -> None: ...


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"size": 0}, r"Batch\(size=...\) must be a whole number from 1 to 10000, not 0"),
    ({"size": 10_001}, "from 1 to 10000"),
    ({"size": 2.5}, "whole number"),
    ({"size": True}, "whole number"),
    ({"timeout": -1}, r"Batch\(timeout=...\)"),
    ({"timeout": math.inf}, r"Batch\(timeout=...\)"),
    ({"timeout": math.nan}, r"Batch\(timeout=...\)"),
    ({"timeout": 3601}, r"Batch\(timeout=...\)"),
    ({"timeout": "1s"}, r"Batch\(timeout=...\)"),
])
def test_batch_values_are_checked(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        Batch(**kwargs)


def test_batch_options_that_make_no_sense_are_refused(plain_app: App) -> None:
    batch = Batch(size=10)
    cases: list[tuple[dict[str, Any], str]] = [
        ({"timeout": 5}, "timeout= cannot be combined with batch="),
        ({"memory_limit": "512MB"}, "memory_limit= cannot be combined with batch="),
        ({"unique": True}, "unique= cannot be combined with batch="),
        ({"group_by": "account"}, "group_by='account' names a parameter"),
        ({"unique_for": 60}, "unique_for, debounce and unique_states need the task's"),
    ]
    for i, (options, message) in enumerate(cases):
        with pytest.raises(ConfigurationError, match=message):
            plain_app.task(name=f"t{i}", batch=batch, **options)(items_fn)
    with pytest.raises(ConfigurationError, match="batch= takes a Batch"):
        plain_app.task(name="n", batch=100)(items_fn)  # type: ignore[call-overload]
    assert not plain_app.tasks


def test_a_batch_function_takes_the_list_of_items(plain_app: App) -> None:
    def with_ctx(ctx: JobContext) -> None: ...

    def two(items: list[BatchItem], extra: int) -> None: ...

    def none() -> None: ...

    for fn in (with_ctx, two, none):
        with pytest.raises(ConfigurationError, match="takes one parameter, the list of items"):
            plain_app.task(name="b", batch=Batch())(fn)  # type: ignore[arg-type]


def test_a_workflow_cannot_be_a_batch_task(plain_app: App) -> None:
    with pytest.raises(ConfigurationError, match="a workflow cannot be a batch task"):
        plain_app.workflow(batch=Batch())


def test_a_batch_tasks_job_refuses_its_own_memory_ceiling(plain_app: App) -> None:
    task = plain_app.task(name="b", batch=Batch())(items_fn)
    with pytest.raises(ConfigurationError, match=r"using\(memory_limit=...\) cannot be given"):
        task.using(memory_limit="1GB").enqueue(1)


def test_a_worker_refuses_a_batch_queue_shared_or_in_processes(plain_app: App) -> None:
    plain_app.task(name="b", queue="bulk", batch=Batch())(items_fn)
    plain_app.task(name="plain", queue="mixed")(lambda: None)
    plain_app.task(name="b2", queue="mixed", batch=Batch())(items_fn)
    with pytest.raises(ConfigurationError, match="queue mixed: batch task b2 shares it with "
                                                 "task plain"):
        Worker(plain_app, {"mixed": 1})
    plain_app.import_path = "x:app"
    with pytest.raises(ConfigurationError, match="cannot run with the process executor"):
        Worker(plain_app, {"bulk": 1}, process_queues={"bulk"})
    with pytest.raises(ConfigurationError, match="or a queue's memory ceiling"):
        Worker(plain_app, {"bulk": 1}, memory_limits={"bulk": "1GB"})
    Worker(plain_app, {"bulk": 1})  # alone in its queue: fine
