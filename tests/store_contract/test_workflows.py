"""Workflow storage: steps fenced by attempt, events sent and taken once."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shiftwork import FakeClock, LeaseLost, ShiftworkError
from shiftwork.store.base import Store

from .helpers import claim_one, done, insert


def test_steps_recorded_by_the_holding_attempt_only(store: Store, clock: FakeClock) -> None:
    [job_id] = insert(store)
    assert store.workflow_steps_get(job_id) == {}
    job = claim_one(store)
    wake = clock.now() + timedelta(minutes=5)
    assert store.workflow_step_record(job_id, job.attempt, "a", "done", '{"x": 1}', None)
    assert store.workflow_step_record(job_id, job.attempt, "nap", "sleeping", None, wake)
    assert not store.workflow_step_record(job_id, job.attempt + 1, "b", "done", "1", None)
    steps = store.workflow_steps_get(job_id)
    assert sorted(steps) == ["a", "nap"]
    assert (steps["a"].result, steps["a"].status, steps["a"].attempt) == ({"x": 1}, "done",
                                                                          job.attempt)
    assert (steps["nap"].status, steps["nap"].wake_at) == ("sleeping", wake)


def test_an_event_is_taken_once_oldest_first(store: Store) -> None:
    [job_id] = insert(store)
    job = claim_one(store)
    assert store.workflow_event_take(job_id, job.attempt, "go", "step1") == (False, None)
    first = store.workflow_event_send(job_id, "go", '{"n": 1}')
    second = store.workflow_event_send(job_id, "go", '{"n": 2}')
    assert second > first
    assert store.workflow_event_take(job_id, job.attempt, "go", "step1") == (True, {"n": 1})
    assert store.workflow_steps_get(job_id)["step1"].result == {"n": 1}
    assert store.workflow_event_take(job_id, job.attempt, "go", "step2") == (True, {"n": 2})
    assert store.workflow_event_take(job_id, job.attempt, "go", "step3") == (False, None)


def test_event_take_is_fenced_by_attempt(store: Store) -> None:
    [job_id] = insert(store)
    job = claim_one(store)
    store.workflow_event_send(job_id, "go", "1")
    with pytest.raises(LeaseLost):
        store.workflow_event_take(job_id, job.attempt + 1, "go", "step")


def test_events_for_finished_or_unknown_workflows_are_refused(store: Store) -> None:
    [job_id] = insert(store)
    store.jobs_complete_many([done(claim_one(store))])
    with pytest.raises(ShiftworkError, match="not active"):
        store.workflow_event_send(job_id, "go", "1")
    with pytest.raises(ShiftworkError, match="not active"):
        store.workflow_event_send(99999, "go", "1")
