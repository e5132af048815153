"""What people and tools call: get, list, retry, cancel, prune, queue counts."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shiftwork import FakeClock, JobNotFoundError, ShiftworkError
from shiftwork.core.states import JobState
from shiftwork.store.base import Store

from .helpers import claim, claim_one, done, insert, new_job, state


def test_get_a_missing_job_raises(store: Store) -> None:
    with pytest.raises(JobNotFoundError):
        store.jobs.get(12345)


def test_get_returns_the_whole_row(store: Store, clock: FakeClock) -> None:
    [(job_id, _)] = store.jobs.insert([new_job("t", "q", 1, priority=3, unique_key="k",
                                               meta={"m": 1})])
    job = store.jobs.get(job_id)
    assert (job.id, job.task, job.queue, job.state, job.args, job.kwargs, job.priority,
            job.attempt, job.max_attempts, job.unique_key, job.meta, job.errors,
            job.cancel_requested) == (job_id, "t", "q", JobState.AVAILABLE, [1], {}, 3, 0, 3,
                                      "k", {"m": 1}, [], False)
    assert job.created_at == job.run_at == clock.now()
    assert job.attempted_at is job.finished_at is job.worker_id is None


def test_list_is_newest_first_and_filters(store: Store) -> None:
    a, b = insert(store, 2, task="a")
    [c] = insert(store, task="b", queue="other")
    claim_one(store)
    assert [j.id for j in store.jobs.list()] == [c, b, a]
    assert [j.id for j in store.jobs.list(task="a")] == [b, a]
    assert [j.id for j in store.jobs.list(queue="other")] == [c]
    assert [j.id for j in store.jobs.list(state=JobState.RUNNING)] == [a]
    assert [j.id for j in store.jobs.list(before_id=c, limit=1)] == [b]
    assert store.jobs.list(task="nothing") == []


@pytest.mark.parametrize("end", [JobState.DEAD, JobState.CANCELLED, JobState.RETRYING])
def test_retry_makes_a_job_available_now(store: Store, clock: FakeClock,
                                         end: JobState) -> None:
    [job_id] = insert(store, max_attempts=1)
    store.jobs.complete_many([done(claim_one(store), end,
                                   run_at=clock.now() + timedelta(hours=1))])
    clock.advance(5)
    job = store.jobs.retry(job_id)
    assert job.state is JobState.AVAILABLE and job.run_at == clock.now()
    assert job.finished_at is None and job.max_attempts == 2  # room for one more attempt
    assert claim_one(store).attempt == 2


def test_retry_of_a_scheduled_job_runs_it_now(store: Store, clock: FakeClock) -> None:
    [job_id] = insert(store, run_at=clock.now() + timedelta(hours=1))
    assert store.jobs.retry(job_id).state is JobState.AVAILABLE


@pytest.mark.parametrize("end", [JobState.RUNNING, JobState.SUCCEEDED])
def test_retry_refuses_running_and_succeeded_jobs(store: Store, end: JobState) -> None:
    [job_id] = insert(store)
    job = claim_one(store)
    if end is JobState.SUCCEEDED:
        store.jobs.complete_many([done(job)])
    with pytest.raises(ShiftworkError, match="only dead, cancelled or waiting"):
        store.jobs.retry(job_id)
    assert state(store, job_id) is end


def test_retry_refuses_when_another_job_holds_the_unique_key(store: Store) -> None:
    [job_id] = insert(store, unique_key="k")
    store.jobs.complete_many([done(claim_one(store), JobState.DEAD)])
    insert(store, unique_key="k")
    with pytest.raises(ShiftworkError, match="unique key"):
        store.jobs.retry(job_id)
    assert state(store, job_id) is JobState.DEAD


def test_retry_of_a_missing_job_raises(store: Store) -> None:
    with pytest.raises(JobNotFoundError):
        store.jobs.retry(12345)


def test_cancel_a_waiting_job_at_once(store: Store) -> None:
    [job_id] = insert(store)
    job = store.jobs.cancel(job_id)
    assert job.state is JobState.CANCELLED and job.finished_at is not None
    assert claim(store) == []


def test_cancel_a_running_job_asks_its_worker(store: Store) -> None:
    [job_id] = insert(store)
    held = claim_one(store)
    job = store.jobs.cancel(job_id)
    assert job.state is JobState.RUNNING and job.cancel_requested
    assert store.jobs.heartbeat("w1", 30, [(held.id, held.attempt)]) == [
        (held.id, held.attempt, True)]


def test_cancel_leaves_finished_jobs_alone(store: Store) -> None:
    [job_id] = insert(store)
    store.jobs.complete_many([done(claim_one(store))])
    job = store.jobs.cancel(job_id)
    assert job.state is JobState.SUCCEEDED and not job.cancel_requested


def test_prune_deletes_finished_jobs_past_their_retention(store: Store,
                                                          clock: FakeClock) -> None:
    insert(store, 4)
    ok, cancelled, dead, running = claim(store)
    store.jobs.complete_many([done(ok), done(cancelled, JobState.CANCELLED),
                              done(dead, JobState.DEAD)])
    [waiting] = insert(store)
    clock.advance(100)
    assert store.jobs.prune(finished_older_than=200, dead_older_than=200) == 0
    assert store.jobs.prune(finished_older_than=50, dead_older_than=200) == 2
    assert sorted(j.id for j in store.jobs.list()) == [dead.id, running.id, waiting]
    assert store.jobs.prune(finished_older_than=50, dead_older_than=50, limit=10) == 1


def test_prune_stops_at_its_limit(store: Store, clock: FakeClock) -> None:
    insert(store, 3)
    store.jobs.complete_many([done(j) for j in claim(store)])
    clock.advance(10)
    assert store.jobs.prune(1, 1, limit=2) == 2
    assert store.jobs.prune(1, 1, limit=2) == 1


def test_queue_stats_count_each_state(store: Store, clock: FakeClock) -> None:
    assert store.jobs.queues_stats() == []
    insert(store, 5)
    insert(store, run_at=clock.now() + timedelta(hours=1))
    ok, dead, cancelled = claim(store, limit=3)
    store.jobs.complete_many([done(ok), done(dead, JobState.DEAD),
                              done(cancelled, JobState.CANCELLED)])
    claim_one(store)
    clock.advance(30)
    [stats] = store.jobs.queues_stats()
    assert (stats.queue, stats.available, stats.scheduled, stats.running, stats.succeeded,
            stats.dead, stats.cancelled) == ("q", 1, 1, 1, 1, 1, 1)
    assert stats.oldest_waiting_age == pytest.approx(30, abs=1)
    [quick] = store.jobs.queues_stats(include_finished=False)
    assert (quick.succeeded, quick.cancelled, quick.dead) == (0, 0, 1)


def test_queue_stats_list_queues_with_only_finished_jobs(store: Store) -> None:
    insert(store, queue="b")
    insert(store, queue="a")
    store.jobs.complete_many([done(claim_one(store, queue="b"))])
    assert [(s.queue, s.available, s.succeeded) for s in store.jobs.queues_stats()] == [
        ("a", 1, 0), ("b", 0, 1)]
    assert [s.queue for s in store.jobs.queues_stats(include_finished=False)] == ["a"]
