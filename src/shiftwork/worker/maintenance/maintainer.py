"""The maintainer: the leader-only services, started when this worker is elected and
stopped when it loses the lease.

One way to attach leader-only work: a service here (the scheduler, the pruner, the
history rollup) or a :class:`~shiftwork.registry.LeaderDuty` registered by a feature
(the App's dependency sweep). Each election makes the services afresh, so nothing a
service remembers (a catch-up cursor, the last prune) outlives the term it was made in.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from shiftwork.core.service import LeaderTerm, Lifecycle, OutageLog, Service

if TYPE_CHECKING:
    from shiftwork.registry import LeaderDuty

log = logging.getLogger("shiftwork.worker")


class Duty(Service):
    """A leader-only duty called with the fresh term every ``interval`` seconds."""

    def __init__(self, duty: LeaderDuty, interval: float, leader: LeaderTerm) -> None:
        super().__init__(interval)
        self.name = duty.name
        self.fn = duty.fn
        self.leader = leader

    def tick(self) -> None:
        term = self.leader.term
        if term is not None:  # stale: the lease may be another's by now
            self.fn(term)


class Maintainer:
    """Starts the services ``make()`` returns on election; stops them on loss or stop."""

    def __init__(self, make: Callable[[], list[Lifecycle]]) -> None:
        self.make = make
        self.running: list[Lifecycle] = []
        self.outage: OutageLog | None = None  # handed to each service (the worker's)

    def elected(self) -> None:
        self.lost()  # a new term after a lost one: the old services are gone first
        self.running = self.make()
        for service in self.running:
            if isinstance(service, Service):
                service.outage = self.outage
            service.start()
        log.debug("leader services started: %s", ", ".join(s.name for s in self.running))

    def lost(self) -> None:
        """Ask every leader-only service to end; do not wait (the leader's own thread
        calls this, and its lease renewal must not wait for a firing pass)."""
        for service in self.running:
            request = getattr(service, "request_stop", None)
            if request is not None:
                request()
            else:
                service.stop(0)

    def stop(self, timeout: float = 5.0) -> None:
        self.lost()
        for service in self.running:
            service.stop(timeout)
        self.running = []
