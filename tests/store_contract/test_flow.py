"""Flow control at the store: fair claims, group counts, pruning idle group buckets."""

from __future__ import annotations

from shiftwork import FakeClock
from shiftwork.flow import ClaimFlow, RateLimit
from shiftwork.records import GroupStats, QueueGroups
from shiftwork.store.base import Store

from .helpers import LEASE, claim, new_job


def _grouped(store: Store, group: str, count: int, queue: str = "q") -> None:
    store.jobs_insert([new_job("t", queue, meta={"group": group}) for _ in range(count)])


def test_a_fair_claim_takes_groups_in_turn(store: Store) -> None:
    _grouped(store, "a", 30)
    _grouped(store, "b", 2)
    store.jobs_insert([new_job("t", "q")])  # no group: a turn of its own per round
    fair = ClaimFlow(fair=True)
    got = [str(j.meta.get("group")) for _ in range(6)
           for j in store.jobs_claim("q", 1, "w", LEASE, None, fair)]
    assert got == ["a", "b", "None", "a", "b", "a"]


def test_group_counts_show_the_busiest_groups(store: Store) -> None:
    _grouped(store, "a", 5)
    _grouped(store, "b", 2)
    _grouped(store, "c", 1, queue="r")
    store.jobs_insert([new_job("t", "q")])
    claim(store, limit=6)  # claim order: a's five first, then one of b's
    assert store.groups_busiest() == [GroupStats("q", "a", 0, 5), GroupStats("q", "b", 1, 1),
                                      GroupStats("r", "c", 1, 0)]
    assert store.groups_busiest("r", 1) == [GroupStats("r", "c", 1, 0)]
    assert store.queue_group_counts() == [QueueGroups("q", 1, 2), QueueGroups("r", 1, 0)]


def test_idle_group_buckets_are_pruned(store: Store, clock: FakeClock) -> None:
    limit = RateLimit(10, per=1)
    flow = ClaimFlow(group_rates={"t": limit})
    _grouped(store, "a", 1)
    _grouped(store, "b", 1)
    store.jobs_claim("q", 10, "w", LEASE, None, flow)
    store.rate_limit_push_back("task:t", 60)
    keys = sorted(k for k, _, _ in store.rate_buckets())
    assert keys == ["group:t:a", "group:t:b", "task:t"]
    assert store.rate_buckets_prune("group:t:", 5) == 0  # just used
    clock.advance(6)
    assert store.rate_buckets_prune("group:t:", 5) == 2
    assert store.rate_buckets_prune("task:", 5) == 0  # pushed back: kept until then
    assert [k for k, _, _ in store.rate_buckets()] == ["task:t"]
