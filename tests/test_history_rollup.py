"""The history rollup: five-minute buckets per queue and per task, written once by the
leader from the workers' counts and the finished jobs (both engines, a fake clock)."""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from shiftwork import App, Backoff
from shiftwork.core.clock import FakeClock
from shiftwork.core.errors import ConfigurationError
from shiftwork.model.records import HistoryBucket
from shiftwork.observe.rollup import BUCKET, GRACE, HistoryRollup

from .conftest import FAST, running_worker, wait_for

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)  # a bucket's start


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START + timedelta(seconds=20))


def _after(bucket_start: datetime) -> datetime:
    """Just after the bucket beginning at ``bucket_start`` may be written."""
    return bucket_start + timedelta(seconds=BUCKET + GRACE + 1)


def _one(rows: list[HistoryBucket], bucket: datetime) -> HistoryBucket:
    found = [r for r in rows if r.bucket == bucket]
    assert len(found) == 1, rows
    return found[0]


def _finish_jobs(app: App, clock: FakeClock) -> None:
    """Ten jobs running 1..10 s of fake time, one that dies at once, one retried once."""

    @app.task(name="work", max_attempts=1)
    def work(seconds: int) -> None:
        # Longer in real time than a claim, so none is claimed ahead (whose time from
        # claim to finish would include the job before it); one at a time, the run
        # time is exactly this advance of the fake clock.
        time.sleep(0.05)
        clock.advance(seconds)
        if seconds == 0:
            raise ValueError("dies")

    @app.task(name="flaky", max_attempts=2, retry=Backoff(initial=0, jitter=False))
    def flaky() -> None:
        raise ValueError("fails twice")

    for s in range(11):
        work.enqueue(s)
    flaky.enqueue()
    with running_worker(app, {"default": 1}):
        wait_for(lambda: len(app.list_jobs(state="succeeded", limit=50)) == 10
                 and len(app.list_jobs(state="dead", limit=50)) == 2, what="every job finished")
    # The worker stopped: its recorder flushed its last counts.


def test_a_bucket_holds_the_counts_and_run_times_of_real_jobs(
        make_app: Callable[..., App], clock: FakeClock) -> None:
    app = make_app(clock=clock)
    _finish_jobs(app, clock)
    assert clock.now() < START + timedelta(seconds=BUCKET)  # all inside the one bucket
    clock.set(_after(START))
    assert HistoryRollup(app.store, clock, app.settings).tick(1) >= 1

    queue = _one(app.history(queue="default", hours=1), START)
    assert (queue.queue, queue.task) == ("default", "")
    assert (queue.succeeded, queue.dead, queue.retried, queue.cancelled) == (10, 2, 1, 0)
    assert queue.failures == 3 and queue.finished == 12
    # Run times 0 (the dead one), 1..10 and the flaky job's last attempt (0): twelve runs;
    # nearest rank: p50 is the 6th (4 s), p95 the 12th (10 s).
    assert queue.runs == 12
    assert queue.p50 == pytest.approx(4.0) and queue.p95 == pytest.approx(10.0)

    work = _one(app.history(task="work", hours=1), START)
    assert (work.queue, work.task, work.succeeded, work.dead, work.retried) == (
        "", "work", 10, 1, 0)
    assert work.runs == 11 and work.p50 == pytest.approx(5.0)
    assert work.p95 == pytest.approx(10.0)
    flaky = _one(app.history(task="flaky", hours=1), START)
    assert (flaky.dead, flaky.retried, flaky.failures) == (1, 1, 2)
    assert {(r.queue, r.task) for r in app.history(hours=1) if r.bucket == START} == {
        ("default", ""), ("", "work"), ("", "flaky")}
    assert queue.to_dict()["p95_seconds"] == pytest.approx(10.0)


def test_the_oldest_due_job_is_sampled_when_the_bucket_closes(
        make_app: Callable[..., App], clock: FakeClock) -> None:
    app = make_app(clock=clock)

    @app.task(name="waits", queue="idle")
    def waits() -> None: ...

    waits.enqueue()
    waits.using(delay=3600).enqueue()  # not due: not waiting yet
    clock.set(_after(START))
    HistoryRollup(app.store, clock, app.settings).tick(1)
    expected = (clock.now() - (START + timedelta(seconds=20))).total_seconds()
    queue = _one(app.history(queue="idle", hours=1), START)
    assert queue.oldest_wait == pytest.approx(expected)
    assert queue.finished == 0 and queue.runs == 0 and queue.p50 is None
    assert _one(app.history(task="waits", hours=1), START).oldest_wait == pytest.approx(
        expected)


def test_a_leader_change_writes_each_bucket_once(
        make_app: Callable[..., App], clock: FakeClock) -> None:
    app = make_app(clock=clock)

    @app.task(name="waits", queue="idle")
    def waits() -> None: ...

    waits.enqueue()
    old, new = (HistoryRollup(app.store, clock, app.settings) for _ in range(2))
    clock.set(START + timedelta(seconds=200))
    old.tick(1)  # mid-bucket: the open bucket is not written
    assert [r for r in app.history(hours=1) if r.bucket == START] == []
    clock.set(_after(START))
    assert new.tick(2) == 1
    first = app.history(hours=1)
    clock.advance(30)  # the old leader, not told yet, writes the same bucket: nothing changes
    old.tick(1)
    assert app.history(hours=1) == first
    assert len([r for r in first if r.bucket == START]) == 2  # the queue's and the task's


def test_buckets_missed_while_no_leader_ran_are_written_without_a_waiting_sample(
        make_app: Callable[..., App], clock: FakeClock) -> None:
    app = make_app(clock=clock)

    @app.task(name="waits", queue="idle")
    def waits() -> None: ...

    waits.enqueue()
    rollup = HistoryRollup(app.store, clock, app.settings)
    clock.set(_after(START))
    rollup.tick(1)
    clock.set(_after(START + timedelta(seconds=3 * BUCKET)))  # three buckets later
    assert rollup.tick(1) == 3
    rows = app.history(queue="idle", hours=1)
    assert [r.bucket for r in rows] == [START + timedelta(seconds=i * BUCKET)
                                        for i in (0, 3)]
    assert all(r.oldest_wait is not None for r in rows)  # the middle two: nothing to say


def test_history_is_pruned_past_its_retention(make_app: Callable[..., App],
                                              clock: FakeClock) -> None:
    app = make_app(clock=clock, settings=dataclasses.replace(FAST, history_retention=3600))

    @app.task(name="waits", queue="idle")
    def waits() -> None: ...

    waits.enqueue()
    rollup = HistoryRollup(app.store, clock, app.settings)
    clock.set(_after(START))
    rollup.tick(1)
    assert app.history(queue="idle", hours=2)
    clock.advance(2 * 3600)
    assert app.store.observe.history_prune(app.settings.history_retention) == 2
    assert app.history(hours=24) == []


@pytest.mark.parametrize("bad", [0, -1, math.nan, math.inf, 24 * 367])
def test_history_refuses_hours_it_cannot_mean(app: App, bad: float) -> None:
    with pytest.raises(ConfigurationError, match=r"history: hours must be > 0"):
        app.history(hours=bad)


def test_history_is_per_queue_or_per_task_not_both(app: App) -> None:
    with pytest.raises(ConfigurationError, match="per queue or per task"):
        app.history(queue="default", task="work")
