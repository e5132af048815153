"""Workflow streams and reruns through the protocol alone (issue 32): an append fenced by
attempt and recorded with its step, written once when repeated, bounded, read after the
job's state; a fork's copy; continue-as-new's reset."""

from __future__ import annotations

from shiftwork import FakeClock, JobState
from shiftwork.store.base import Store

from .helpers import claim_one, insert


def _append(store: Store, job_id: int, attempt: int, step: str, value: str | None,
            position: int, clock: FakeClock, most: int = 10) -> object:
    return store.streams.append(job_id, attempt, "k", value, closed=value is None, step=step,
                                position=position, digest=None, started_at=clock.now(),
                                max_values=most)


def test_an_append_is_fenced_recorded_and_written_once(store: Store, clock: FakeClock) -> None:
    [job_id] = insert(store)
    job = claim_one(store)
    assert _append(store, job_id, job.attempt + 1, "stream:k:0", "1", 0, clock) is None
    first = _append(store, job_id, job.attempt, "stream:k:0", "1", 0, clock)
    assert first == (0, 0, False, False)
    again = _append(store, job_id, job.attempt, "stream:k:0", "1", 0, clock)  # a repeat
    assert again is not None and again[0] == 0  # type: ignore[index]
    assert _append(store, job_id, job.attempt, "stream:k:1", '{"a": 2}', 1, clock
                   ) == (1, 1, False, False)
    steps = store.workflows.steps_get(job_id)
    assert (steps["stream:k:1"].kind, steps["stream:k:1"].result) == ("stream", 1)
    page = store.streams.read(job_id, "k", 0, 10)
    assert page.state is JobState.RUNNING
    assert [(i.seq, i.value, i.closed) for i in page.items] == [(0, 1, False),
                                                                (1, {"a": 2}, False)]
    assert [i.seq for i in store.streams.read(job_id, "k", 1, 10).items] == [1]
    assert store.streams.read(job_id, "other", 0, 10).items == []
    assert store.streams.read(10**9, "k", 0, 10).state is None


def test_a_full_or_closed_stream_takes_nothing(store: Store, clock: FakeClock) -> None:
    [job_id] = insert(store)
    job = claim_one(store)
    _append(store, job_id, job.attempt, "stream:k:0", "1", 0, clock, most=1)
    full = _append(store, job_id, job.attempt, "stream:k:1", "2", 1, clock, most=1)
    assert full == (None, 1, False, False)
    assert _append(store, job_id, job.attempt, "stream:k:close", None, 2, clock, most=1
                   ) == (1, 1, True, False)  # a close is not counted against the bound
    closed = _append(store, job_id, job.attempt, "stream:k:2", "3", 3, clock)
    assert closed == (None, 2, True, False)
    assert [(k.key, k.values, k.closed) for k in store.streams.keys(job_id)] == [
        ("k", 1, True)]


def test_continue_as_new_resets_the_instance(store: Store, clock: FakeClock) -> None:
    [job_id] = insert(store)
    job = claim_one(store)
    assert store.workflows.begin(job_id, job.attempt, "v1") is not None
    store.workflows.step_record(job_id, job.attempt, "a", "done", "1", None, position=0)
    _append(store, job_id, job.attempt, "stream:k:0", "1", 1, clock)
    assert store.reruns.generation(job_id) == 0
    assert store.reruns.continue_as_new(job_id, job.attempt + 1, '{"args": [], "kwargs": {}}',
                                        "v2", f"wf:{job_id}:", 1) is None  # fenced
    for _ in range(2):  # a repeat (a lost reply) sets the same
        assert store.reruns.continue_as_new(job_id, job.attempt,
                                            '{"args": [7], "kwargs": {}}', "v2",
                                            f"wf:{job_id}:", 1) is False
    assert store.workflows.steps_get(job_id) == {}
    assert store.reruns.generation(job_id) == 1
    assert store.jobs.get(job_id).args == [7]
    run = store.workflows.run_read(job_id)
    assert run is not None and run.version == "v2"
    assert len(store.streams.read(job_id, "k", 0, 10).items) == 1  # streams are kept
    assert store.reruns.generation(10**9) is None
