"""Workflow storage: the instance row, steps fenced by attempt, events sent and taken once,
cancelling, listing."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from shiftwork import FakeClock, JobState, LeaseLost, ShiftworkError
from shiftwork.model.records import ClaimedJob
from shiftwork.store.base import Store

from .helpers import claim, claim_one, done, insert


def test_steps_recorded_by_the_holding_attempt_only(store: Store, clock: FakeClock) -> None:
    [job_id] = insert(store)
    assert store.workflows.steps_get(job_id) == {}
    job = claim_one(store)
    wake = clock.now() + timedelta(minutes=5)
    # False: recorded, and no cancel requested; None: this attempt no longer holds the job
    assert store.workflows.step_record(job_id, job.attempt, "a", "done", '{"x": 1}', None) is False
    assert store.workflows.step_record(job_id, job.attempt, "nap", "sleeping", None,
                                      wake) is False
    assert store.workflows.step_record(job_id, job.attempt + 1, "b", "done", "1", None) is None
    steps = store.workflows.steps_get(job_id)
    assert sorted(steps) == ["a", "nap"]
    assert (steps["a"].result, steps["a"].status, steps["a"].attempt) == ({"x": 1}, "done",
                                                                          job.attempt)
    assert (steps["nap"].status, steps["nap"].wake_at) == ("sleeping", wake)


def test_an_event_is_taken_once_oldest_first(store: Store) -> None:
    [job_id] = insert(store)
    job = claim_one(store)
    assert store.workflows.event_take(job_id, job.attempt, "go", "step1") == (False, None)
    first = store.workflows.event_send(job_id, "go", '{"n": 1}')
    second = store.workflows.event_send(job_id, "go", '{"n": 2}')
    assert second > first
    assert store.workflows.event_take(job_id, job.attempt, "go", "step1") == (True, {"n": 1})
    assert store.workflows.steps_get(job_id)["step1"].result == {"n": 1}
    assert store.workflows.event_take(job_id, job.attempt, "go", "step2") == (True, {"n": 2})
    assert store.workflows.event_take(job_id, job.attempt, "go", "step3") == (False, None)


def test_an_event_sent_under_a_key_is_found_by_it(store: Store) -> None:
    """Issue 27, item 4: what lets `workflows signal --key` say a repeat was deduplicated."""
    [job_id] = insert(store)
    assert store.workflows.event_find(job_id, "paid", "inv-1") is None
    sent = store.workflows.event_send(job_id, "paid", "1", "inv-1")
    assert store.workflows.event_find(job_id, "paid", "inv-1") == sent
    assert store.workflows.event_send(job_id, "paid", "2", "inv-1") == sent  # not stored again
    assert store.workflows.event_find(job_id, "paid", "inv-2") is None
    assert store.workflows.event_find(job_id, "other", "inv-1") is None


def test_event_take_is_fenced_by_attempt(store: Store) -> None:
    [job_id] = insert(store)
    job = claim_one(store)
    store.workflows.event_send(job_id, "go", "1")
    with pytest.raises(LeaseLost):
        store.workflows.event_take(job_id, job.attempt + 1, "go", "step")


def test_events_for_finished_or_unknown_workflows_are_refused(store: Store) -> None:
    [job_id] = insert(store)
    store.jobs.complete_many([done(claim_one(store))])
    with pytest.raises(ShiftworkError, match="not active"):
        store.workflows.event_send(job_id, "go", "1")
    with pytest.raises(ShiftworkError, match="not active"):
        store.workflows.event_send(99999, "go", "1")


def test_begin_creates_the_instance_once_and_reads_its_steps(store: Store) -> None:
    [job_id] = insert(store)
    job = claim_one(store)
    assert store.workflows.run_read(job_id) is None
    assert store.workflows.begin(job_id, job.attempt + 1, "v1") is None  # stale: nothing
    began = store.workflows.begin(job_id, job.attempt, "v1")
    assert began is not None
    run, steps = began
    assert (run.status, run.version, run.cancelled, run.cancel_requested, steps) == (
        "running", "v1", False, False, {})
    store.workflows.step_record(job_id, job.attempt, "a", "done", "1", None)
    again = store.workflows.begin(job_id, job.attempt, "v2")  # the first version stays
    assert again is not None and again[0].version == "v1" and list(again[1]) == ["a"]
    assert store.workflows.run_read(job_id) == again[0]


def test_run_set_is_fenced_and_can_extend_the_attempts(store: Store) -> None:
    [job_id] = insert(store)
    job = claim_one(store)
    store.workflows.begin(job_id, job.attempt, "v1")
    assert not store.workflows.run_set(job_id, job.attempt + 1, "failed", cancelled=False)
    assert store.workflows.run_set(job_id, job.attempt, "compensating", cancelled=False,
                                  cause="boom", last_attempt=job.attempt, extend_attempts=5)
    run = store.workflows.run_read(job_id)
    assert run is not None
    assert (run.status, run.cause, run.last_attempt, run.max_attempts) == (
        "compensating", "boom", job.attempt, job.attempt + 5)  # room for 5 more attempts


def test_cancel_flags_a_started_workflow_only(store: Store) -> None:
    [plain] = insert(store)
    assert not store.workflows.cancel(plain)  # never began: not a workflow
    [job_id] = insert(store)
    job = next(j for j in claim(store) if j.id == job_id)
    store.workflows.begin(job_id, job.attempt, "v1")
    assert store.workflows.cancel(job_id)
    assert store.workflows.step_record(job_id, job.attempt, "a", "done", "1", None) is True


def test_list_shows_workflows_with_their_status(store: Store) -> None:
    [job_id] = insert(store, task="flow")
    job = claim_one(store)
    store.workflows.begin(job_id, job.attempt, "v1")
    store.workflows.step_record(job_id, job.attempt, "a", "done", "1", None)
    [summary] = store.workflows.summaries()
    assert (summary.id, summary.task, summary.status, summary.version, summary.steps) == (
        job_id, "flow", "running", "v1", 1)
    assert store.workflows.summaries(status="failed") == []
    assert store.workflows.summaries(task="other") == []


def test_a_join_report_wakes_the_workflow_only_when_all_are_in(store: Store,
                                                               clock: FakeClock) -> None:
    [job_id] = insert(store)
    job = claim_one(store)
    later = clock.now() + timedelta(days=365)

    def park(held: ClaimedJob) -> None:  # the workflow suspends until woken
        store.jobs.complete_many([done(held, JobState.SCHEDULED, run_at=later)])

    park(job)
    join = ("p/", 3)
    store.workflows.event_send(job_id, "p/0", "1", "done", join=join)
    again = store.workflows.event_send(job_id, "p/0", "1", "done", join=join)  # stored once
    store.workflows.event_send(job_id, "p/1", "1", "done", join=join)
    assert claim(store) == []  # 2 of 3 reported (the resent one counted once): asleep
    last = store.workflows.event_send(job_id, "p/2", "1", "done", join=join)
    assert last > again
    woken = claim_one(store)  # the third wakes it
    assert woken.id == job_id
    assert store.workflows.event_take(job_id, woken.attempt, "p/1", "p/1") == (True, 1)
    with pytest.raises(ShiftworkError, match="needs a key"):
        store.workflows.event_send(job_id, "p/3", "1", join=join)
    with pytest.raises(ShiftworkError, match="positive int"):
        store.workflows.event_send(job_id, "p/3", "1", "done", join=("p/", 0))


def test_a_join_under_way_without_its_counter_is_counted_once(store: Store,
                                                             clock: FakeClock) -> None:
    """A join with reports in but no counter row (under way at the upgrade to migration
    0015): its next report counts the ones already in, and the last still wakes it."""
    [job_id] = insert(store)
    job = claim_one(store)
    store.jobs.complete_many([done(job, JobState.SCHEDULED,
                                   run_at=clock.now() + timedelta(days=365))])
    join = ("p/", 4)
    store.workflows.event_send(job_id, "p/0", "1", "done", join=join)
    store.workflows.event_send(job_id, "p/1", "1", "done", join=join)
    with store.transaction() as c:  # as before the upgrade: no counter
        table = "workflow_joins" if store.engine == "sqlite" else \
            f'"{store.schema}".workflow_joins'  # type: ignore[attr-defined]
        c.execute(f"DELETE FROM {table}")
    store.workflows.event_send(job_id, "p/2", "1", "done", join=join)
    assert claim(store) == []  # 3 of 4
    store.workflows.event_send(job_id, "p/3", "1", "done", join=join)
    assert claim_one(store).id == job_id


def test_many_events_are_taken_in_one_go(store: Store) -> None:
    [job_id] = insert(store)
    job = claim_one(store)
    store.workflows.event_send(job_id, "j/0", '{"n": 0}', "done")
    store.workflows.event_send(job_id, "j/2", '{"n": 2}', "done")
    got = store.workflows.events_take(job_id, job.attempt, ["j/0", "j/1", "j/2"])
    assert got == [(True, {"n": 0}), (False, None), (True, {"n": 2})]
    steps = store.workflows.steps_get(job_id)
    assert sorted(steps) == ["j/0", "j/2"] and steps["j/2"].result == {"n": 2}
    assert store.workflows.events_take(job_id, job.attempt, ["j/0", "j/2"]) == [
        (False, None), (False, None)]  # taken once
    with pytest.raises(LeaseLost):
        store.workflows.events_take(job_id, job.attempt + 1, ["j/1"])


def test_join_reports_sent_at_once_still_wake_the_workflow(store: Store,
                                                           clock: FakeClock) -> None:
    """Reports from many workers at the same instant: the last one to commit sees all the
    others (none counts short and leaves the workflow asleep)."""
    [job_id] = insert(store)
    job = claim_one(store)
    store.jobs.complete_many([done(job, JobState.SCHEDULED,
                                   run_at=clock.now() + timedelta(days=365))])
    n = 16
    start = threading.Barrier(n)

    def report(i: int) -> None:
        start.wait()
        store.workflows.event_send(job_id, f"p/{i}", "1", "done", join=("p/", n))

    threads = [threading.Thread(target=report, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert claim_one(store).id == job_id
