"""Talking to a workflow, through the store's protocol: published state (fenced, never
backwards) and updates (stored for an active workflow, resolved once, fenced)."""

from __future__ import annotations

import pytest

from shiftwork import JobState, LeaseLost, ShiftworkError
from shiftwork.store.base import Store

from .helpers import claim_one, done, insert


def test_state_is_fenced_and_never_moves_back(store: Store) -> None:
    [job_id] = insert(store)
    job = claim_one(store)
    assert store.workflows.state_get(job_id) == {}
    store.workflows.state_set(job_id, job.attempt, "p", '{"n": 1}', 10)
    store.workflows.state_set(job_id, job.attempt, "p", '{"n": 2}', 20)
    store.workflows.state_set(job_id, job.attempt, "p", '{"n": 0}', 5)  # a replay's: older
    store.workflows.state_set(job_id, job.attempt, "q", "null", 1)
    store.workflows.state_set(job_id, job.attempt + 1, "p", '{"n": 9}', 99)  # not the holder
    assert store.workflows.state_get(job_id) == {"p": {"n": 2}, "q": None}
    store.workflows.state_set(job_id, job.attempt, "p", '{"n": 3}', 20)  # the same place
    assert store.workflows.state_get(job_id)["p"] == {"n": 3}


def test_an_update_is_resolved_once_with_its_step(store: Store) -> None:
    [job_id] = insert(store)
    first = store.workflows.update_send(job_id, "add", '{"item": "a"}')
    second = store.workflows.update_send(job_id, "add", '{"item": "b"}')
    assert second > first
    out = store.workflows.update_read(first)
    assert out is not None and (out.status, out.job_state) == ("pending", JobState.AVAILABLE)
    job = claim_one(store)
    assert store.workflows.update_next(job_id, "add") == (first, {"item": "a"})
    assert store.workflows.update_next(job_id, "other") is None
    assert store.workflows.update_resolve(job_id, job.attempt, first, accepted=True,
                                          result_json='["a"]', error_json=None, step="add-0",
                                          position=0) is True
    assert store.workflows.update_resolve(job_id, job.attempt, first, accepted=True,
                                          result_json='["x"]', error_json=None,
                                          step="add-0") is False  # once
    step = store.workflows.steps_get(job_id)["add-0"]
    assert (step.status, step.kind, step.result, step.position) == ("done", "update", ["a"], 0)
    assert store.workflows.update_resolve(
        job_id, job.attempt, second, accepted=False, result_json=None,
        error_json='{"type": "ValueError", "message": "no"}', step="add-1") is True
    assert "add-1" not in store.workflows.steps_get(job_id)  # a rejection records no step
    assert store.workflows.update_next(job_id, "add") is None
    a, b = store.workflows.update_read(first), store.workflows.update_read(second)
    assert a is not None and (a.status, a.result) == ("accepted", ["a"])
    assert b is not None and (b.status, b.error) == ("rejected",
                                                     {"type": "ValueError", "message": "no"})
    listed = store.workflows.updates_list(job_id)
    assert [(u.id, u.status, u.step) for u in listed] == [(second, "rejected", None),
                                                          (first, "accepted", "add-0")]
    assert listed[1].resolved_at is not None and listed[0].payload == {"item": "b"}
    assert store.workflows.update_read(10_000_000) is None


def test_update_resolution_is_fenced_by_attempt(store: Store) -> None:
    [job_id] = insert(store)
    update = store.workflows.update_send(job_id, "add", "1")
    job = claim_one(store)
    with pytest.raises(LeaseLost):
        store.workflows.update_resolve(job_id, job.attempt + 1, update, accepted=True,
                                       result_json="1", error_json=None, step="s")
    out = store.workflows.update_read(update)
    assert out is not None and out.status == "pending"


def test_updates_for_finished_or_unknown_workflows_are_refused(store: Store) -> None:
    [job_id] = insert(store)
    store.jobs.complete_many([done(claim_one(store))])
    with pytest.raises(ShiftworkError, match="not active"):
        store.workflows.update_send(job_id, "add", "1")
    with pytest.raises(ShiftworkError, match="not active"):
        store.workflows.update_send(10_000_000, "add", "1")
