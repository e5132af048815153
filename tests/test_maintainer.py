"""Leader-only services: started when a worker is elected, stopped when it loses the
lease, made afresh for the next term; the term they read goes stale on a paused leader."""

from __future__ import annotations

import threading
from collections.abc import Callable

from shiftwork import App, FakeClock
from shiftwork.core.service import Lifecycle, Service
from shiftwork.registry import LeaderDuty
from shiftwork.store.fleet import LEADER_NAME
from shiftwork.worker.maintenance.duties import leader_services
from shiftwork.worker.maintenance.leader import Leader
from shiftwork.worker.maintenance.maintainer import Duties, Maintainer

from .conftest import running_worker, wait_for


class Recording(Service):
    name = "recording"

    def __init__(self, made: list[Recording]) -> None:
        super().__init__(0.01)
        made.append(self)
        self.ticks = 0

    def tick(self) -> None:
        self.ticks += 1


def test_services_start_on_election_and_stop_when_the_lease_is_lost(
        make_app: Callable[..., App], clock: FakeClock) -> None:
    app = make_app(clock=clock)
    made: list[Recording] = []

    def make() -> list[Lifecycle]:
        return [Recording(made)]

    leader = Leader(app.runtime, "w1", Maintainer(make))
    leader.tick()
    assert leader.term is not None and len(made) == 1
    wait_for(lambda: made[0].ticks > 0, what="the leader-only service ticking")

    # Another worker takes the lease (this one's was released behind its back).
    app.store.fleet.leader_release(LEADER_NAME, "w1")
    assert app.store.fleet.leader_acquire(LEADER_NAME, "w2", 60) is not None
    leader.tick()
    assert leader.term is None
    wait_for(lambda: made[0].stopping, what="the service asked to stop")

    app.store.fleet.leader_release(LEADER_NAME, "w2")
    leader.tick()
    assert leader.term is not None
    assert len(made) == 2 and not made[1].stopping, "a new term makes the services afresh"
    leader.stop()
    assert all(s.stopping for s in made)


def test_a_paused_leader_finds_its_term_stale(make_app: Callable[..., App],
                                             clock: FakeClock) -> None:
    app = make_app(clock=clock)
    leader = Leader(app.runtime, "w1")
    leader.tick()
    term = leader.term
    assert term is not None
    clock.advance(app.settings.leader_ttl * 2 / 3 + 0.1)  # no renewal meanwhile
    assert leader.term is None, "a leader-only service must not act on an unrenewed lease"
    leader.tick()
    assert leader.term == term  # renewed: the same term, fresh again
    leader.stop()


def test_a_registered_duty_runs_on_the_leader_only(make_app: Callable[..., App]) -> None:
    app = make_app()
    terms: list[int] = []
    app.runtime.registry.leader_duties.append(LeaderDuty("probe", terms.append, 0.05))
    with running_worker(app):
        wait_for(lambda: len(terms) >= 2, what="the duty running on the leader")
    assert len(set(terms)) == 1  # one worker, one term

    # What a leader starts: the built-in services, then the duties features registered.
    leader = Leader(app.runtime, "w1")
    scheduler, duties = leader_services(app.runtime, "w1", leader, threading.Event())
    assert scheduler.name == "scheduler"
    assert isinstance(duties, Duties)  # one thread for every duty, in order
    assert [d.name for d, _ in duties.every] == ["pruner", "history", "dependency-sweep",
                                                 "probe"]


def test_one_failing_duty_does_not_keep_the_others_from_running(
        make_app: Callable[..., App]) -> None:
    app = make_app()
    ran: list[str] = []

    def broken(term: int) -> None:
        raise RuntimeError("a bug in one duty")

    leader = Leader(app.runtime, "w1")
    leader.tick()
    duties = Duties([LeaderDuty("broken", broken, 60), LeaderDuty("fine", ran.append, 60)],
                    60, leader)
    duties.tick()
    duties.tick()  # neither is due again within its interval
    assert ran == [leader.term]
    leader.stop()


def test_a_duty_on_the_ticks_own_interval_runs_at_a_tick_that_comes_early(
        make_app: Callable[..., App]) -> None:
    """The leader's ticks wait up to a tenth less than their interval (core/service.py
    jittered()); a duty due every tick (the history rollup) still runs at each one,
    rather than at every second."""
    import time

    app = make_app()
    ran: list[int] = []
    leader = Leader(app.runtime, "w1")
    leader.tick()
    duties = Duties([LeaderDuty("every-tick", ran.append, 0.2)], 0.2, leader)
    duties.tick()
    duties.tick()  # at once: not due
    time.sleep(0.2 * 0.92)  # a tick drawn 8% early
    duties.tick()
    assert len(ran) == 2
    leader.stop()
