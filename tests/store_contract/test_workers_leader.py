"""The worker registry and the named leader lease; the store's own life cycle."""

from __future__ import annotations

import pytest

from shiftwork import FakeClock
from shiftwork.store.base import Store

from .helpers import claim, insert


def test_migrate_twice_applies_nothing_the_second_time(store: Store) -> None:
    assert store.migrate() == []


def test_ping_and_db_now(store: Store, clock: FakeClock) -> None:
    store.ping()
    assert store.db_now() == clock.now()  # the injected clock stands in for the database's


def test_workers_upsert_list_and_delete(store: Store, clock: FakeClock) -> None:
    assert store.fleet.workers_list() == []
    store.fleet.workers_upsert("w1", "host-a", 11, {"q": 4})
    started = clock.now()
    clock.advance(5)
    store.fleet.workers_upsert("w2", "host-b", 22, {})
    clock.advance(5)
    store.fleet.workers_upsert("w1", "host-a", 11, {"q": 4, "r": 1})  # again: a heartbeat
    w1, w2 = store.fleet.workers_list()  # oldest first
    assert (w1.id, w1.host, w1.pid, w1.queues) == ("w1", "host-a", 11, {"q": 4, "r": 1})
    assert (w1.started_at, w1.heartbeat_at) == (started, clock.now())
    assert w2.id == "w2"
    store.fleet.workers_delete("w1")
    store.fleet.workers_delete("nobody")
    assert [w.id for w in store.fleet.workers_list()] == ["w2"]


def test_workers_prune_deletes_the_silent_ones(store: Store, clock: FakeClock) -> None:
    store.fleet.workers_upsert("old", "h", 1, {})
    clock.advance(100)
    store.fleet.workers_upsert("new", "h", 2, {})
    assert store.fleet.workers_prune(stale_after=50) == 1
    assert [w.id for w in store.fleet.workers_list()] == ["new"]
    assert store.fleet.workers_prune(stale_after=50) == 0


def test_a_heartbeat_registers_a_pruned_worker_again(store: Store, clock: FakeClock) -> None:
    """Issue 28, failover: after an outage longer than the prune's staleness (a failover
    with the default settings: 15 s), the first worker back as leader pruned the others'
    rows, and their heartbeats (an UPDATE of their row) never brought them back: live
    workers missing from the registry for good (tests/test_failover.py saw one of two)."""
    insert(store, 1)
    (job,) = claim(store, limit=1, worker="w1")
    store.fleet.workers_upsert("w1", "host-a", 11, {"q": 4}, ["t1"])
    clock.advance(100)  # an outage: no beat
    assert store.fleet.workers_prune(stale_after=50) == 1 and store.fleet.workers_list() == []
    assert store.jobs.heartbeat("w1", 30, [(job.id, job.attempt)]) == [
        (job.id, job.attempt, False)]  # the leases renewed as ever
    (w1,) = store.fleet.workers_list()
    assert (w1.id, w1.host, w1.pid, w1.queues, w1.tasks) == (
        "w1", "host-a", 11, {"q": 4}, frozenset({"t1"}))
    assert w1.heartbeat_at == clock.now()
    store.fleet.workers_delete("w1")  # stopped: a beat after that (none is sent) registers nothing
    store.jobs.heartbeat("w1", 30, [])
    assert store.fleet.workers_list() == []


def test_workers_running_counts_running_jobs_per_worker(store: Store) -> None:
    assert store.observe.workers_running() == {}
    insert(store, 3)
    claim(store, limit=2, worker="w1")
    claim(store, limit=2, worker="w2")
    assert store.observe.workers_running() == {"w1": 2, "w2": 1}


def test_leader_lease_is_held_renewed_and_taken_over(store: Store, clock: FakeClock) -> None:
    assert store.fleet.leader_acquire("lead", "a", ttl=10) == 1
    assert store.fleet.leader_acquire("lead", "b", ttl=10) is None
    clock.advance(5)
    assert store.fleet.leader_acquire("lead", "a", ttl=10) == 1  # renewed, same term
    clock.advance(9)
    assert store.fleet.leader_acquire("lead", "b", ttl=10) is None  # the renewal holds
    clock.advance(2)
    assert store.fleet.leader_acquire("lead", "b", ttl=10) == 2  # expired: a new term
    assert store.fleet.leader_acquire("lead", "a", ttl=10) is None
    assert store.fleet.leader_acquire("other", "a", ttl=10) == 1  # names are independent


@pytest.mark.parametrize("releaser", ["b", "a"])
def test_leader_release_by_its_owner_only(store: Store, releaser: str) -> None:
    assert store.fleet.leader_acquire("lead", "a", ttl=60) == 1
    store.fleet.leader_release("lead", releaser)
    expected = 2 if releaser == "a" else None
    assert store.fleet.leader_acquire("lead", "b", ttl=60) == expected
