"""Holds and edits through the store protocol alone (issue 30): ``store.console``'s
hold, release, run-now and update statements, and the completion of a job a hold was
asked of; on both engines."""

from __future__ import annotations

from datetime import timedelta

from shiftwork import FakeClock
from shiftwork.core.states import JobState
from shiftwork.store.base import Store

from .helpers import claim, claim_one, done, insert, state


def test_hold_release_and_run_now_move_only_their_states(store: Store,
                                                         clock: FakeClock) -> None:
    [running, due] = insert(store, 2)
    [later] = insert(store, run_at=clock.now() + timedelta(hours=1))
    assert claim_one(store).id == running  # the oldest
    held, asked = store.console.hold_batch([later, due, running, 10**9])
    assert (held, asked) == (sorted([later, due]), [running])
    assert claim(store) == []  # the others are held
    assert store.jobs.get(running).hold_requested
    released, withdrawn = store.console.release_batch([later, due])
    assert (released, withdrawn) == (sorted([later, due]), [])
    assert (state(store, later), state(store, due)) == (JobState.SCHEDULED, JobState.AVAILABLE)
    assert store.console.run_now_batch([later, running]) == [later]
    assert state(store, later) is JobState.AVAILABLE


def test_a_failed_attempt_a_hold_was_asked_of_is_held(store: Store) -> None:
    [job_id] = insert(store, max_attempts=3)
    job = claim_one(store)
    store.console.hold_batch([job_id])
    store.jobs.complete_many([done(job, JobState.RETRYING, error={
        "type": "E", "message": "m", "kind": "error"})])
    got = store.jobs.get(job_id)
    assert (got.state, got.hold_requested, got.attempt) == (JobState.HELD, False, 1)


def test_update_edits_waiting_and_held_jobs_only(store: Store, clock: FakeClock) -> None:
    [running, job_id] = insert(store, 2)
    assert claim_one(store).id == running  # the oldest
    later = clock.now() + timedelta(hours=2)
    assert store.console.update_waiting(job_id, later, 5, "other")
    got = store.jobs.get(job_id)
    assert (got.state, got.run_at, got.priority, got.queue) == (
        JobState.SCHEDULED, later, 5, "other")
    assert store.console.update_waiting(job_id, None, None, None)  # nothing changes
    assert not store.console.update_waiting(running, None, 1, None)
    assert store.jobs.get(running).priority == 0
