"""The fleet's shares of the work: of N workers hearing one wake-up only `count` claim
(worker/wake_share.py), and only the leader rescues at every interval (worker/rescuer.py).
Real stores (SQLite files); the worker roster is written as workers write it."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

from shiftwork import App, Settings
from shiftwork.store.wakeups import shared_wakeups
from shiftwork.worker.maintenance.rescuer import Rescuer
from shiftwork.worker.wake_share import WakeShare


def test_a_wakeup_is_taken_by_as_many_workers_as_it_has_jobs(
        make_app: Callable[..., App]) -> None:
    app = make_app()
    ids = [f"host:{pid}:w" for pid in range(8)]
    for pid, worker_id in enumerate(ids):
        app.store.fleet.workers_upsert(worker_id, "host", pid, {"emails": 4})
    app.store.fleet.workers_upsert("other", "host", 99, {"reports": 4})  # not serving emails
    shares = [WakeShare(app.runtime, worker_id, ["emails"]) for worker_id in ids]
    for count in (1, 3, 7):
        for payload in shared_wakeups([("emails", count)] * 20):
            woken = [s for s in shares if s.queue_to_wake(payload) == "emails"]
            assert len(woken) == count
    everyone = shared_wakeups([("emails", 12)])[0]  # more jobs than workers: all claim
    assert all(s.queue_to_wake(everyone) == "emails" for s in shares)
    # Bare queues and "*" (hand-backs, a lost listener) wake every worker.
    assert all(s.queue_to_wake("emails") == "emails" for s in shares)
    assert all(s.queue_to_wake("*") == "*" for s in shares)
    # A worker not on the roster yet claims on every wake-up, as before.
    newcomer = WakeShare(app.runtime, "host:100:new", ["emails"])
    assert newcomer.queue_to_wake(shared_wakeups([("emails", 1)])[0]) == "emails"


def test_the_token_spreads_wakeups_over_the_fleet(make_app: Callable[..., App]) -> None:
    app = make_app()
    ids = [f"host:{pid}:w" for pid in range(4)]
    for pid, worker_id in enumerate(ids):
        app.store.fleet.workers_upsert(worker_id, "host", pid, {"emails": 4})
    shares = [WakeShare(app.runtime, worker_id, ["emails"]) for worker_id in ids]
    taken = [0] * 4
    for payload in shared_wakeups([("emails", 1)] * 400):
        for i, s in enumerate(shares):
            taken[i] += s.queue_to_wake(payload) == "emails"
    assert sum(taken) == 400 and min(taken) > 50, taken


def test_only_the_leader_rescues_every_interval(make_app: Callable[..., App]) -> None:
    app = make_app(settings=Settings(rescue_interval=1.0, leader_ttl=6.0))
    calls = 0
    inner = app.store.jobs.rescue

    def counted(limit: int = 1000) -> list:  # type: ignore[type-arg]
        nonlocal calls
        calls += 1
        return inner(limit)

    app.store.jobs.rescue = counted  # type: ignore[method-assign]
    leader = SimpleNamespace(term=None)
    rescuer = Rescuer(app.runtime, leader)  # type: ignore[arg-type]
    for _ in range(12):
        rescuer.tick()
    assert calls == 2  # a follower: once per leader_ttl (a backstop)
    leader.term = 3
    for _ in range(12):
        rescuer.tick()
    assert calls == 14  # the leader: every rescue_interval
