"""Leases: heartbeat, rescue, giving back after a lost reply, handing back at shutdown."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shiftwork import FakeClock
from shiftwork.core.states import JobState
from shiftwork.model.outcome import Outcome
from shiftwork.store.base import Store

from .helpers import LEASE, claim, claim_one, done, insert, state


def test_heartbeat_extends_only_the_pairs_named(store: Store, clock: FakeClock) -> None:
    insert(store, 2)
    a, b = claim(store)
    clock.advance(10)
    assert store.jobs.heartbeat("w1", LEASE, [(a.id, a.attempt)]) == [(a.id, a.attempt, False)]
    assert store.jobs.get(a.id).lease_expires_at == clock.now() + timedelta(seconds=LEASE)
    assert store.jobs.get(b.id).lease_expires_at == clock.now() + timedelta(seconds=LEASE - 10)


def test_heartbeat_is_fenced_by_attempt_and_worker(store: Store) -> None:
    insert(store)
    job = claim_one(store)
    assert store.jobs.heartbeat("w1", LEASE, [(job.id, job.attempt + 1)]) == []
    assert store.jobs.heartbeat("w2", LEASE, [(job.id, job.attempt)]) == []
    assert store.jobs.heartbeat("w1", LEASE, []) == []


def test_heartbeat_marks_the_worker_alive(store: Store, clock: FakeClock) -> None:
    store.fleet.workers_upsert("w1", "host", 1, {"q": 1})
    clock.advance(20)
    store.jobs.heartbeat("w1", LEASE, [])
    [worker] = store.fleet.workers_list()
    assert worker.heartbeat_at == clock.now()


def test_rescue_brings_expired_leases_back_or_kills_the_last_attempt(
        store: Store, clock: FakeClock) -> None:
    [again] = insert(store, max_attempts=2)
    [last] = insert(store, max_attempts=1)
    insert(store)
    claim(store, limit=2)
    assert store.jobs.rescue() == []  # leases still good
    clock.advance(LEASE + 1)
    store.jobs.heartbeat("w1", LEASE, [])  # a heartbeat naming nothing saves nothing
    rescued = {r.id: r for r in store.jobs.rescue()}
    assert set(rescued) == {again, last}
    assert (rescued[again].state, rescued[again].attempt, rescued[again].task) == (
        JobState.AVAILABLE, 1, "t")
    assert rescued[last].state is JobState.DEAD
    assert store.jobs.get(again).errors[-1]["kind"] == "lease_expired"
    assert store.jobs.get(last).finished_at is not None
    assert store.jobs.rescue() == []


def test_rescue_stops_at_its_limit(store: Store, clock: FakeClock) -> None:
    insert(store, 3)
    claim(store)
    clock.advance(LEASE + 1)
    assert len(store.jobs.rescue(limit=2)) == 2
    assert len(store.jobs.rescue(limit=2)) == 1


def test_release_unknown_gives_back_what_the_worker_does_not_hold(store: Store) -> None:
    insert(store, 3)
    insert(store, queue="other")
    known, lost1, lost2 = claim(store)
    [elsewhere] = claim(store, queue="other")
    released = store.jobs.release_unknown("w1", "q", [(known.id, known.attempt)])
    assert sorted(released) == [lost1.id, lost2.id]
    job = store.jobs.get(lost1.id)
    assert job.state is JobState.AVAILABLE and job.max_attempts == 3  # attempt not spent
    assert (job.attempt, job.uncounted, job.counted_attempt) == (1, 1, 0)
    assert job.errors[-1]["kind"] == "released"
    assert state(store, known.id) is state(store, elsewhere.id) is JobState.RUNNING
    assert store.jobs.release_unknown("w2", "q", []) == []


def test_hand_back_returns_jobs_without_spending_an_attempt(store: Store) -> None:
    assert store.jobs.hand_back("w1", []) == 0
    insert(store, 3)
    a, b, c = claim(store)
    assert store.jobs.hand_back("w1", [(a.id, a.attempt), (b.id, b.attempt + 1)]) == 1
    assert store.jobs.hand_back("w2", [(c.id, c.attempt)]) == 0  # not its job
    job = store.jobs.get(a.id)
    assert job.state is JobState.AVAILABLE and job.max_attempts == 3
    assert job.counted_attempt == 0  # not spent
    assert job.errors[-1]["kind"] == "handed_back"
    assert state(store, b.id) is state(store, c.id) is JobState.RUNNING
    assert claim_one(store).id == a.id


@pytest.mark.parametrize("gone", ["hand_back", "rescue", "release"])
def test_a_job_given_back_is_not_written_as_completed(store: Store, clock: FakeClock,
                                                      gone: str) -> None:
    insert(store)
    job = claim_one(store)
    if gone == "hand_back":
        store.jobs.hand_back("w1", [(job.id, job.attempt)])
    elif gone == "rescue":
        clock.advance(LEASE + 1)
        store.jobs.rescue()
    else:
        store.jobs.release_unknown("w1", "q", [])
    claim_one(store, worker="w2")
    assert store.jobs.written([Outcome(job.id, job.attempt, JobState.SUCCEEDED)]) == set()


def test_rescue_spares_a_workflow_run_that_never_began_or_lost_its_last_attempt(
        store: Store, clock: FakeClock) -> None:
    """Issue 13: a workflow is never left dead while running or half compensated."""
    [unbegun, lost_last, compensating, plain] = insert(store, 4, max_attempts=1)
    jobs = {j.id: j for j in claim(store)}
    for job_id in (unbegun, lost_last, compensating):  # these runs began their body
        assert store.workflows.begin(job_id, jobs[job_id].attempt, "v1") is not None
    assert store.workflows.run_set(compensating, jobs[compensating].attempt, "compensating",
                                  cancelled=False, cause="b failed")
    # unbegun suspends (not counted), and its next run is claimed but never begins
    store.jobs.complete_many([done(jobs[unbegun], JobState.SCHEDULED, run_at=clock.now())])
    [again] = claim(store)
    assert (again.id, again.attempt, again.counted_attempt) == (unbegun, 2, 1)
    clock.advance(LEASE + 1)
    rescued = {r.id: r.state for r in store.jobs.rescue()}
    assert rescued == {unbegun: JobState.AVAILABLE, lost_last: JobState.AVAILABLE,
                       compensating: JobState.DEAD, plain: JobState.DEAD}
    for job_id in (unbegun, lost_last):
        job = store.jobs.get(job_id)
        assert (job.counted_attempt, job.max_attempts) == (0, 1)  # the lost run not counted
    assert store.workflows.run_read(unbegun).last_attempt is None  # nothing of it happened
    assert store.workflows.run_read(lost_last).last_attempt == jobs[lost_last].attempt
    ended = store.workflows.run_read(compensating)
    assert ended.status == "failed" and "died on the last attempt" in (ended.cause or "")
