"""Claiming ahead: a worker claims the jobs its pool will finish during one claim.

What it promises: never more jobs running than the queue's concurrency (sync or
async); nothing claimed ahead for jobs longer than a claim; a timeout counts from
when the job begins, not from its claim; at shutdown, jobs that have not begun go
back to the queue at once, their attempt not counted.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from shiftwork import App, JobState
from shiftwork.worker.producer import Producer

from .conftest import running_worker, wait_for


class Gauge:
    """How many jobs run at once, and the most seen."""

    def __init__(self) -> None:
        self.now = 0
        self.most = 0
        self.lock = threading.Lock()

    def enter(self) -> None:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)

    def leave(self) -> None:
        with self.lock:
            self.now -= 1


def succeeded(app: App) -> int:
    return sum(q.succeeded for q in app.queue_stats())


def _train(app: App, worker_queue: str = "default", n: int = 200) -> None:
    """Run enough short jobs that the producer has claimed ahead."""
    @app.task(name="short", queue=worker_queue)
    def short() -> None: ...

    short.enqueue_many([()] * n)


def test_sync_jobs_never_exceed_concurrency_while_claiming_ahead(app: App) -> None:
    gauge = Gauge()

    @app.task(queue="default")
    def tiny() -> None:
        gauge.enter()
        time.sleep(0.0005)
        gauge.leave()

    tiny.enqueue_many([()] * 600)
    with running_worker(app, {"default": 4}) as worker:
        wait_for(lambda: succeeded(app) == 600, what="all done")
        producer = worker.producers["default"]
        assert producer.capacity > 4, "short jobs: the producer claims ahead"
    assert gauge.most <= 4


def test_async_jobs_never_exceed_concurrency_while_claiming_ahead(app: App) -> None:
    gauge = Gauge()

    @app.task(queue="default")
    async def tiny_async() -> None:
        gauge.enter()
        await asyncio.sleep(0.0005)
        gauge.leave()

    tiny_async.enqueue_many([()] * 600)
    with running_worker(app, {"default": 3}) as worker:
        wait_for(lambda: succeeded(app) == 600, what="all done")
        assert worker.producers["default"].capacity > 3
    assert gauge.most <= 3


def test_nothing_is_claimed_ahead_for_jobs_longer_than_a_claim(app: App) -> None:
    producer = Producer(app.runtime, "default", 10, "w", lambda job: None, list)
    producer._plan_capacity()
    assert producer.capacity == 10, "no figures yet: claim only for free slots"
    producer._claim_seconds = 0.003
    producer._job_seconds = 2.0
    producer._plan_capacity()
    assert producer.capacity == 10
    producer._job_seconds = 0.001
    producer._plan_capacity()
    assert producer.capacity == 10 + 30, "a claim's worth of jobs per slot: 3 ms / 1 ms"
    producer._job_seconds = 0.0001
    producer._plan_capacity()
    assert producer.capacity == 10 + 80, "at most eight more jobs per slot"
    wide = Producer(app.runtime, "default", 200, "w", lambda job: None, list)
    wide._claim_seconds, wide._job_seconds = 0.003, 0.0001
    wide._plan_capacity()
    claim_batch = app.runtime.settings.claim_batch
    assert wide.capacity == 200 + max(400, 2 * claim_batch), "two per slot, or two claims"


@pytest.mark.parametrize("engine", ["sqlite", "postgres"], indirect=True)
def test_timeout_counts_from_when_the_job_begins(app: App) -> None:
    release = threading.Event()

    @app.task(queue="default")
    def blocker() -> None:
        release.wait(10)

    @app.task(queue="default", timeout=0.5)
    def quick() -> str:
        return "ok"

    _train(app)
    with running_worker(app, {"default": 1}) as worker:
        wait_for(lambda: succeeded(app) == 200, what="training jobs")
        b = blocker.enqueue()
        wait_for(lambda: app.get_job(b.id).state is JobState.RUNNING, what="blocker runs")
        q = quick.enqueue()
        # claimed ahead behind the blocker, it waits longer than its own timeout
        wait_for(lambda: app.get_job(q.id).state is JobState.RUNNING, what="quick claimed")
        # its slot and up to eight claimed ahead (a claim's worth of such short jobs)
        assert 2 <= worker.producers["default"].capacity <= 9
        time.sleep(1.0)
        release.set()
        wait_for(lambda: app.get_job(q.id).state is JobState.SUCCEEDED, what="quick done")
    job = app.get_job(q.id)
    assert job.attempt == 1 and job.errors == [] and job.result == "ok"


@pytest.mark.parametrize("engine", ["sqlite", "postgres"], indirect=True)
def test_shutdown_hands_back_jobs_that_have_not_begun_at_once(app: App) -> None:
    release = threading.Event()
    ran: list[int] = []

    @app.task(queue="default")
    def blocker() -> None:
        release.wait(20)

    @app.task(queue="default", max_attempts=3)
    def later(n: int) -> None:
        ran.append(n)

    _train(app)
    with running_worker(app, {"default": 2}, grace=20) as worker:
        wait_for(lambda: succeeded(app) == 200, what="training jobs")
        blockers = [blocker.enqueue() for _ in range(2)]
        wait_for(lambda: all(app.get_job(b.id).state is JobState.RUNNING for b in blockers),
                 what="both slots busy")
        waiting = [later.enqueue(i) for i in range(2)]
        wait_for(lambda: all(app.get_job(w.id).state is JobState.RUNNING for w in waiting),
                 what="claimed ahead")
        stopper = threading.Thread(target=worker.shutdown)
        stopper.start()
        # back in the queue while the blockers still run their grace period
        wait_for(lambda: all(app.get_job(w.id).state is JobState.AVAILABLE for w in waiting),
                 what="handed back")
        assert all(app.get_job(b.id).state is JobState.RUNNING for b in blockers)
        release.set()
        stopper.join(30)
    assert ran == []
    for w in waiting:
        job = app.get_job(w.id)
        assert job.state is JobState.AVAILABLE
        assert (job.attempt, job.counted_attempt, job.max_attempts) == (1, 0, 3), \
            "the attempt is not counted"
        assert [e["kind"] for e in job.errors] == ["handed_back"]
    assert all(app.get_job(b.id).state is JobState.SUCCEEDED for b in blockers)
