"""Long jobs: touch (checkpoint, progress, lease), the caller's transaction, effect keys."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shiftwork import FakeClock
from shiftwork.core.states import JobState
from shiftwork.model.records import Touch
from shiftwork.store.base import Store

from .helpers import LEASE, claim_one, done, insert, new_job


def test_touch_saves_checkpoint_and_progress_and_extends_the_lease(
        store: Store, clock: FakeClock) -> None:
    insert(store)
    job = claim_one(store)
    clock.advance(10)
    touch = store.long_jobs.touch(job.id, job.attempt, 60, checkpoint='{"page": 3}',
                             set_checkpoint=True, progress='{"done": 3}')
    assert touch == Touch(cancel_requested=False, paused=False, yielded=False)
    row = store.jobs.get(job.id)
    assert (row.checkpoint, row.progress) == ({"page": 3}, {"done": 3})
    assert row.lease_expires_at == clock.now() + timedelta(seconds=60)
    store.long_jobs.touch(job.id, job.attempt, 1, progress='{"done": 4}')  # never shortens
    row = store.jobs.get(job.id)
    assert (row.checkpoint, row.progress) == ({"page": 3}, {"done": 4})
    assert row.lease_expires_at == clock.now() + timedelta(seconds=60)


def test_touch_can_clear_the_checkpoint(store: Store) -> None:
    insert(store)
    job = claim_one(store)
    store.long_jobs.touch(job.id, job.attempt, LEASE, checkpoint='"x"', set_checkpoint=True)
    store.long_jobs.touch(job.id, job.attempt, LEASE, checkpoint=None, set_checkpoint=True)
    assert store.jobs.get(job.id).checkpoint is None


def test_a_checkpoint_comes_back_with_the_next_claim(store: Store) -> None:
    insert(store)
    job = claim_one(store)
    store.long_jobs.touch(job.id, job.attempt, LEASE, checkpoint='{"page": 3}', set_checkpoint=True)
    store.jobs.hand_back("w1", [(job.id, job.attempt)])
    assert claim_one(store).checkpoint == {"page": 3}


@pytest.mark.parametrize("how", ["stale attempt", "finished"])
def test_touch_is_fenced_by_attempt(store: Store, how: str) -> None:
    insert(store)
    job = claim_one(store)
    attempt = job.attempt + 1 if how == "stale attempt" else job.attempt
    if how == "finished":
        store.jobs.complete_many([done(job)])
    assert store.long_jobs.touch(job.id, attempt, LEASE, checkpoint='1',
                                 set_checkpoint=True) is None
    assert store.jobs.get(job.id).checkpoint is None


def test_touch_reports_cancel_and_pause(store: Store) -> None:
    insert(store)
    job = claim_one(store)
    store.jobs.cancel(job.id)
    store.long_jobs.queues_set_paused("q", True)
    assert store.long_jobs.touch(job.id, job.attempt, LEASE, yield_if_paused=True) == Touch(
        cancel_requested=True, paused=True, yielded=False)  # cancelling wins over yielding
    assert store.jobs.get(job.id).state is JobState.RUNNING


def test_touch_yields_to_a_paused_queue_only_when_asked(store: Store) -> None:
    insert(store)
    job = claim_one(store)
    store.long_jobs.queues_set_paused("q", True)
    assert store.long_jobs.touch(job.id, job.attempt, LEASE) == Touch(False, True, False)
    assert store.long_jobs.touch(job.id, job.attempt, LEASE, yield_if_paused=True) == Touch(
        False, True, True)
    row = store.jobs.get(job.id)
    assert row.state is JobState.AVAILABLE and row.max_attempts == 3  # attempt not spent
    assert row.counted_attempt == 0
    assert row.errors[-1]["kind"] == "paused"


def test_transaction_commits_on_exit(store: Store) -> None:
    with store.transaction() as conn:
        [(job_id, created)] = store.jobs.insert([new_job()], conn=conn)
        assert store.long_jobs.effect_keys_insert("k", job_id, None, 60, conn=conn)
    assert created and store.jobs.get(job_id).state is JobState.AVAILABLE
    assert store.long_jobs.effect_keys_get("k") is not None


def test_transaction_rolls_back_on_error(store: Store) -> None:
    with pytest.raises(RuntimeError), store.transaction() as conn:
        store.jobs.insert([new_job()], conn=conn)
        store.long_jobs.effect_keys_insert("k", None, None, 60, conn=conn)
        raise RuntimeError("the caller's work failed")
    assert store.jobs.list() == [] and store.long_jobs.effect_keys_get("k") is None


def test_effect_key_first_insert_wins(store: Store, clock: FakeClock) -> None:
    assert store.long_jobs.effect_keys_get("k") is None
    assert store.long_jobs.effect_keys_insert("k", 7, 2, keep_seconds=60, result='{"v": 1}')
    assert not store.long_jobs.effect_keys_insert("k", 8, 1, keep_seconds=60, result='{"v": 2}')
    record = store.long_jobs.effect_keys_get("k")
    assert record is not None
    assert (record.key, record.result, record.job_id, record.attempt) == ("k", {"v": 1}, 7, 2)
    assert (record.created_at, record.expires_at) == (clock.now(),
                                                      clock.now() + timedelta(seconds=60))


def test_effect_key_result_set_later(store: Store) -> None:
    assert store.long_jobs.effect_keys_insert("k", None, None, keep_seconds=60)
    record = store.long_jobs.effect_keys_get("k")
    assert record is not None and record.result is None
    store.long_jobs.effect_keys_set_result("k", '[1, 2]')
    store.long_jobs.effect_keys_set_result("missing", '1')  # no such key: nothing to do
    record = store.long_jobs.effect_keys_get("k")
    assert record is not None and record.result == [1, 2]
    assert store.long_jobs.effect_keys_get("missing") is None


def test_effect_keys_prune_after_they_expire(store: Store, clock: FakeClock) -> None:
    for key, keep in [("a", 10), ("b", 10), ("c", 100)]:
        store.long_jobs.effect_keys_insert(key, None, None, keep_seconds=keep)
    assert store.long_jobs.effect_keys_prune() == 0
    clock.advance(11)
    assert store.long_jobs.effect_keys_prune(limit=1) == 1
    assert store.long_jobs.effect_keys_prune() == 1
    assert [store.long_jobs.effect_keys_get(k) is None for k in "abc"] == [True, True, False]
    assert store.long_jobs.effect_keys_insert("a", None, None, 10)  # free again
