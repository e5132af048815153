"""Insert, claim, complete and the lost-reply check: the calls every job makes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta

import pytest

from shiftwork import FakeClock
from shiftwork.core.states import JobState
from shiftwork.model.new_job import NewJob
from shiftwork.model.outcome import Outcome
from shiftwork.store.base import Store

from .helpers import claim, claim_one, done, insert, new_job, state


def test_insert_of_nothing_returns_nothing(store: Store) -> None:
    assert store.jobs.insert([]) == []
    assert store.jobs.list() == []


@pytest.mark.parametrize("count", [1, 3, 250])  # one, a few, enough for bulk paths
def test_insert_returns_new_ids_in_order(store: Store, count: int) -> None:
    results = store.jobs.insert([new_job("t", "q", i) for i in range(count)])
    assert [r.created for r in results] == [True] * count
    ids = [r.id for r in results]
    assert ids == sorted(ids) and len(set(ids)) == count
    assert [store.jobs.get(i).args for i in (ids[0], ids[-1])] == [[0], [count - 1]]


def test_insert_due_now_is_available_and_later_is_scheduled(store: Store,
                                                           clock: FakeClock) -> None:
    [now_id] = insert(store)
    [later_id] = insert(store, run_at=clock.now() + timedelta(minutes=5))
    assert (state(store, now_id), state(store, later_id)) == (JobState.AVAILABLE,
                                                              JobState.SCHEDULED)


def test_an_active_unique_key_wins_and_a_finished_one_frees_it(store: Store) -> None:
    first, again, same_batch = store.jobs.insert([new_job(unique_key="k")]) + store.jobs.insert(
        [new_job(unique_key="k"), new_job(unique_key="k")])[:2]
    assert first.created and not again.created and not same_batch.created
    assert first.id == again.id == same_batch.id
    store.jobs.complete_many([done(claim_one(store))])
    [fresh] = store.jobs.insert([new_job(unique_key="k")])
    assert fresh.created and fresh.id != first.id


def test_insert_stream_inserts_count_jobs(store: Store) -> None:
    results = store.jobs.insert_stream(300, (new_job("t", "q", i) for i in range(300)))
    assert len(results) == 300 and all(r.created for r in results)
    assert len(claim(store, limit=1000)) == 300


def test_insert_stream_is_all_or_nothing(store: Store) -> None:
    def jobs() -> Iterator[NewJob]:
        for i in range(300):
            if i == 250:
                raise ValueError("a job failed to build")
            yield new_job("t", "q", i)

    with pytest.raises(ValueError):
        store.jobs.insert_stream(300, jobs())
    assert store.jobs.list() == []


def test_claim_takes_due_jobs_of_its_queue_by_priority_then_age(store: Store,
                                                                clock: FakeClock) -> None:
    low = insert(store, priority=0)[0]
    high = insert(store, priority=5)[0]
    insert(store, queue="other")
    insert(store, run_at=clock.now() + timedelta(minutes=1))
    claimed = claim(store)
    assert [c.id for c in claimed] == [high, low]
    assert all(c.attempt == 1 and c.queue == "q" for c in claimed)
    assert state(store, low) is JobState.RUNNING and store.jobs.get(low).worker_id == "w1"
    assert claim(store) == []  # running jobs are not claimed twice


def test_claim_returns_what_the_worker_needs(store: Store) -> None:
    store.jobs.insert([NewJob("t", "q", json.dumps({"args": [1], "kwargs": {"a": 2}}),
                              max_attempts=7, timeout=2.5, meta_json='{"m": 1}')])
    job = claim_one(store)
    assert (job.task, job.args, job.kwargs, job.max_attempts, job.timeout, job.checkpoint,
            job.meta) == ("t", [1], {"a": 2}, 7, 2.5, None, {"m": 1})


def test_claim_stops_at_its_limit(store: Store) -> None:
    insert(store, 5)
    assert len(claim(store, limit=3)) == 3
    assert len(claim(store, limit=3)) == 2


def test_claim_keeps_task_limits_across_the_fleet(store: Store) -> None:
    insert(store, 3, task="limited")
    insert(store, 2, task="free")
    first = claim(store, limit=10, limits={"limited": 2})
    assert sorted(c.task for c in first) == ["free", "free", "limited", "limited"]
    assert claim(store, limit=10, worker="w2", limits={"limited": 2}) == []
    store.jobs.complete_many([done(next(c for c in first if c.task == "limited"))])
    [last] = claim(store, limit=10, worker="w2", limits={"limited": 2})
    assert last.task == "limited"


def test_claim_respects_its_limit_with_task_limits(store: Store) -> None:
    insert(store, 3, task="limited")
    insert(store, 3, task="free")
    assert len(claim(store, limit=2, limits={"limited": 5})) == 2


def test_complete_of_nothing_returns_nothing(store: Store) -> None:
    assert store.jobs.complete_many([]) == set()


def test_complete_writes_each_outcome(store: Store, clock: FakeClock) -> None:
    insert(store, 4)
    ok, retry, dead, cancelled = claim(store)
    later = clock.now() + timedelta(minutes=1)
    written = store.jobs.complete_many([
        done(ok, result_json='{"r": 1}'),
        done(retry, JobState.RETRYING, run_at=later, error={"attempt": 1, "message": "x"}),
        done(dead, JobState.DEAD, error={"attempt": 1, "message": "y"}),
        done(cancelled, JobState.CANCELLED)])
    assert written == {ok.id, retry.id, dead.id, cancelled.id}
    got = {j.id: j for j in store.jobs.list()}
    assert got[ok.id].state is JobState.SUCCEEDED and got[ok.id].result == {"r": 1}
    assert got[ok.id].finished_at is not None and got[ok.id].lease_expires_at is None
    assert got[retry.id].state is JobState.RETRYING and got[retry.id].run_at == later
    assert got[retry.id].errors == [{"attempt": 1, "message": "x"}]
    assert got[retry.id].finished_at is None
    assert got[dead.id].state is JobState.DEAD and got[dead.id].errors[0]["message"] == "y"
    assert got[cancelled.id].state is JobState.CANCELLED


def test_complete_writes_a_limited_attempts_peak(store: Store) -> None:
    """A job with a memory ceiling: the last attempt's peak RSS is written with its outcome,
    a plain success (no result) included; jobs without one keep none (issue 35)."""
    insert(store, 3)
    peaked, failed, plain = claim(store)
    store.jobs.complete_many([
        done(peaked, peak_rss=70 << 20),
        done(failed, JobState.DEAD, error={"attempt": 1, "peak_rss": 210 << 20},
             peak_rss=210 << 20),
        done(plain)])
    got = {j.id: j for j in store.jobs.list()}
    assert got[peaked.id].peak_rss == 70 << 20 and got[peaked.id].attempt_peaks == [
        (1, 70 << 20)]
    assert got[failed.id].peak_rss == 210 << 20
    assert got[failed.id].attempt_peaks == [(1, 210 << 20)]  # once, from its error record
    assert got[plain.id].peak_rss is None and got[plain.id].attempt_peaks == []


def test_complete_is_fenced_by_attempt(store: Store, clock: FakeClock) -> None:
    [job_id] = insert(store)
    first = claim_one(store)
    clock.advance(60)
    store.jobs.rescue()
    second = claim_one(store, worker="w2")
    assert second.attempt == first.attempt + 1
    assert store.jobs.complete_many([done(first)]) == set()  # the stale attempt
    assert state(store, job_id) is JobState.RUNNING
    assert store.jobs.complete_many([done(first), done(second)]) == {job_id}
    assert store.jobs.complete_many([done(second)]) == set()  # once only


def test_a_retried_job_is_claimed_again_when_due(store: Store, clock: FakeClock) -> None:
    insert(store)
    job = claim_one(store)
    store.jobs.complete_many([done(job, JobState.RETRYING,
                                   run_at=clock.now() + timedelta(seconds=10))])
    assert claim(store) == []
    clock.advance(11)
    assert claim_one(store).attempt == 2


def test_written_of_nothing_returns_nothing(store: Store) -> None:
    assert store.jobs.written([]) == set()


def test_written_names_outcomes_already_recorded(store: Store, clock: FakeClock) -> None:
    insert(store, 3)
    a, b, c = claim(store)
    store.jobs.complete_many([done(a), done(b, JobState.DEAD)])
    asked = [done(a), done(b), done(c)]  # b was written as dead, c not at all
    assert store.jobs.written(asked) == {a.id}
    assert store.jobs.written([Outcome(a.id, a.attempt + 1, JobState.SUCCEEDED)]) == set()
