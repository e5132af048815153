"""store.jobs.insert of jobs whose key the unique_keys table holds (model/new_job.py
Dedup), and unique_keys_prune, on each engine through the protocol alone."""

from __future__ import annotations

from shiftwork import FakeClock
from shiftwork.model.new_job import Dedup, NewJob
from shiftwork.store.base import Store


def _job(key: str, **rule: object) -> NewJob:
    return NewJob("t", "default", '{"args": [], "kwargs": {}}',
                  dedup=Dedup(key, **rule))  # type: ignore[arg-type]


def test_a_window_returns_its_holder_until_it_expires(store: Store, other: Store,
                                                      clock: FakeClock) -> None:
    first = store.jobs.insert([_job("t:a", hold_for=10.0)])[0]
    assert first.created
    again = other.jobs.insert([_job("t:a", hold_for=10.0), _job("t:b", hold_for=10.0)])
    assert (again[0].id, again[0].created) == (first.id, False) and again[1].created
    clock.advance(10.5)
    assert store.jobs.insert([_job("t:a", hold_for=10.0)])[0].created


def test_unique_keys_prune_stops_at_its_limit(store: Store, clock: FakeClock) -> None:
    store.jobs.insert([_job(f"t:{i}", hold_for=1.0) for i in range(3)])
    assert store.jobs.unique_keys_prune() == 0
    clock.advance(2)
    assert store.jobs.unique_keys_prune(limit=2) == 2
    assert store.jobs.unique_keys_prune() == 1
    assert store.jobs.unique_keys_prune() == 0
