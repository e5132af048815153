"""Paused queues: what a pause stops (claims) and what it leaves alone."""

from __future__ import annotations

from shiftwork.core.states import JobState
from shiftwork.store.base import Store

from .helpers import LEASE, claim, claim_one, insert


def test_paused_lists_only_paused_queues(store: Store) -> None:
    assert store.long_jobs.queues_paused() == set()
    store.long_jobs.queues_set_paused("a", True)
    store.long_jobs.queues_set_paused("b", True)
    store.long_jobs.queues_set_paused("b", False)
    store.long_jobs.queues_set_paused("c", False)  # never paused: nothing to undo
    assert store.long_jobs.queues_paused() == {"a"}


def test_a_paused_queue_is_not_claimed_until_resumed(store: Store) -> None:
    insert(store, 2)
    insert(store, queue="other")
    store.long_jobs.queues_set_paused("q", True)
    assert claim(store) == []
    assert len(claim(store, queue="other")) == 1  # other queues carry on
    store.long_jobs.queues_set_paused("q", False)
    assert len(claim(store)) == 2


def test_pausing_leaves_running_jobs_and_enqueues_alone(store: Store) -> None:
    insert(store)
    running = claim_one(store)
    store.long_jobs.queues_set_paused("q", True)
    [waiting] = insert(store)
    assert store.jobs.get(waiting).state is JobState.AVAILABLE
    assert store.jobs.heartbeat("w1", LEASE, [(running.id, running.attempt)]) == [
        (running.id, running.attempt, False)]
    [stats] = store.jobs.queues_stats()
    assert (stats.available, stats.running) == (1, 1)
