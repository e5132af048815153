"""Flow control at the store: task rate limits, fair claims, group counts, pruning idle
group buckets."""

from __future__ import annotations

import threading

from shiftwork import FakeClock
from shiftwork.flow import claiming
from shiftwork.model.limits import ClaimFlow, RateLimit
from shiftwork.model.records import GroupStats, QueueGroups
from shiftwork.store.base import Store

from .helpers import LEASE, claim, new_job


def _grouped(store: Store, group: str, count: int, queue: str = "q") -> None:
    store.jobs.insert([new_job("t", queue, meta={"group": group}) for _ in range(count)])


def test_a_fair_claim_takes_groups_in_turn(store: Store) -> None:
    _grouped(store, "a", 30)
    _grouped(store, "b", 2)
    store.jobs.insert([new_job("t", "q")])  # no group: a turn of its own per round
    fair = ClaimFlow(fair=True)
    got = [str(j.meta.get("group")) for _ in range(6)
           for j in claiming.claim(store, "q", 1, "w", LEASE, None, fair)]
    assert got == ["a", "b", "None", "a", "b", "a"]


def test_group_counts_show_the_busiest_groups(store: Store) -> None:
    _grouped(store, "a", 5)
    _grouped(store, "b", 2)
    _grouped(store, "c", 1, queue="r")
    store.jobs.insert([new_job("t", "q")])
    claim(store, limit=6)  # claim order: a's five first, then one of b's
    assert store.observe.groups_busiest() == [
        GroupStats("q", "a", 0, 5), GroupStats("q", "b", 1, 1), GroupStats("r", "c", 1, 0)]
    assert store.observe.groups_busiest("r", 1) == [GroupStats("r", "c", 1, 0)]
    assert store.observe.queue_group_counts() == [QueueGroups("q", 1, 2), QueueGroups("r", 1, 0)]


def test_idle_group_buckets_are_pruned(store: Store, clock: FakeClock) -> None:
    limit = RateLimit(10, per=1)
    flow = ClaimFlow(group_rates={"t": limit})
    _grouped(store, "a", 1)
    _grouped(store, "b", 1)
    claiming.claim(store, "q", 10, "w", LEASE, None, flow)
    store.jobs.rate_limit_push_back("task:t", 60)
    keys = sorted(k for k, _, _ in store.jobs.rate_buckets())
    assert keys == ["group:t:a", "group:t:b", "task:t"]
    assert store.jobs.rate_buckets_prune("group:t:", 5) == 0  # just used
    clock.advance(6)
    assert store.jobs.rate_buckets_prune("group:t:", 5) == 2
    assert store.jobs.rate_buckets_prune("task:", 5) == 0  # pushed back: kept until then
    assert [k for k, _, _ in store.jobs.rate_buckets()] == ["task:t"]


def _task_rates() -> ClaimFlow:
    # Two tasks with their own limits on one queue, a third without (Postgres claims this
    # in one statement, jobs_claim_task_rates; the Python loop elsewhere).
    return ClaimFlow(task_rates={"fast": RateLimit(5, per=1, burst=5),
                                "slow": RateLimit(2, per=1, burst=2)})


def test_task_rate_limits_claim_each_task_within_its_own_tokens(
        store: Store, clock: FakeClock) -> None:
    store.jobs.insert([new_job("slow", priority=9) for _ in range(6)])
    store.jobs.insert([new_job("fast", priority=5) for _ in range(8)])
    store.jobs.insert([new_job("free") for _ in range(3)])
    flow = _task_rates()
    got = [j.task for j in claiming.claim(store, "q", 20, "w", LEASE, None, flow)]
    assert got == ["slow"] * 2 + ["fast"] * 5 + ["free"] * 3  # claim order, each in budget
    assert claiming.claim(store, "q", 20, "w", LEASE, None, flow) == []  # none, no error
    tokens = {k: t for k, t, _ in store.jobs.rate_buckets()}
    assert tokens == {"task:fast": 0, "task:slow": 0}  # spent exactly, never below zero
    clock.advance(0.5)  # 2.5 tokens for fast, 1 for slow: whole tokens only
    got = [j.task for j in claiming.claim(store, "q", 20, "w", LEASE, None, flow)]
    assert got == ["slow", "fast", "fast"]
    tokens = {k: t for k, t, _ in store.jobs.rate_buckets()}
    assert abs(tokens["task:fast"] - 0.5) < 1e-6 and abs(tokens["task:slow"]) < 1e-6
    clock.advance(0.05)  # 0.75 and 0.1 tokens: not a whole one
    assert claiming.claim(store, "q", 1, "w", LEASE, None, flow) == []
    # The jobs over the limit stay waiting, their attempt not spent.
    waiting = store.jobs.claim("q", 100, "w", LEASE)  # no limits: everything left
    assert sorted(j.task for j in waiting) == ["fast"] * 1 + ["slow"] * 3
    assert all(j.attempt == 1 for j in waiting)


def test_task_rate_limits_hold_across_concurrent_claimers(
        store: Store, other: Store) -> None:
    store.jobs.insert([new_job(t) for t in ("fast", "slow", "free") for _ in range(40)])
    flow = _task_rates()
    got: list[str] = []
    lock = threading.Lock()

    def claimer(s: Store) -> None:
        for _ in range(6):
            jobs = claiming.claim(s, "q", 4, "w", LEASE, None, flow)
            with lock:
                got.extend(j.task for j in jobs)

    threads = [threading.Thread(target=claimer, args=(s,)) for s in (store, other) * 3]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # The clock stands still: the burst of each bucket, and not one job more.
    assert got.count("fast") == 5 and got.count("slow") == 2
    assert all(t >= 0 for _, t, _ in store.jobs.rate_buckets())


def test_a_paused_queue_claims_nothing_under_task_rate_limits(store: Store) -> None:
    store.jobs.insert([new_job(t) for t in ("fast", "slow", "free")])
    store.long_jobs.queues_set_paused("q", True)
    one = ClaimFlow(task_rates={"fast": RateLimit(5, per=1, burst=5)})
    for flow in (one, _task_rates()):
        assert claiming.claim(store, "q", 10, "w", LEASE, None, flow) == []
    store.long_jobs.queues_set_paused("q", False)
    assert sorted(j.task for j in claiming.claim(store, "q", 10, "w", LEASE, None, one)) == [
        "fast", "free", "slow"]
    assert {k: t for k, t, _ in store.jobs.rate_buckets()}["task:fast"] == 4
