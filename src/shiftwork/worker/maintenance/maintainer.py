"""The maintainer: the leader-only services, started when this worker is elected and
stopped when it loses the lease.

One way to attach leader-only work: a service here (the scheduler, the pruner, the
history rollup) or a :class:`~shiftwork.registry.LeaderDuty` registered by a feature
(the App's dependency sweep). Each election makes the services afresh, so nothing a
service remembers (a catch-up cursor, the last prune) outlives the term it was made in.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from shiftwork.core.errors import StorageError
from shiftwork.core.service import JITTER, LeaderTerm, Lifecycle, OutageLog, Service

if TYPE_CHECKING:
    from shiftwork.registry import LeaderDuty

log = logging.getLogger("shiftwork.worker")


class Duties:
    """The leader-only duties, one after another on the leader's own thread, after each
    renewal: each is called with the fresh term when its interval has passed. No thread
    of their own, so they never hold a pooled connection beside the renewal's on an idle
    worker. The intervals are real time (the leader's ticks are): a fake clock in tests
    moves what the duties decide, not how often they run."""

    name = "leader-duties"

    def __init__(self, duties: list[LeaderDuty], default_interval: float,
                 leader: LeaderTerm) -> None:
        self.every = [(d, d.interval or default_interval) for d in duties]
        self.leader = leader
        self.started = threading.Event()
        self._due: dict[str, float] = {}  # duty name -> when it is due (time.monotonic)

    def start(self) -> None:
        self.started.set()  # run by the leader's ticks (Maintainer.tick_duties)

    def stop(self, timeout: float = 5.0) -> None:
        """Nothing to stop: the leader stops calling."""

    def tick(self) -> None:
        for duty, interval in self.every:
            term = self.leader.term
            if term is None:  # stale: the lease may be another's by now
                return
            now = time.monotonic()
            # Due within the ticks' jitter counts as due: a duty on the tick's own
            # interval would otherwise wait for every second tick.
            if now < self._due.get(duty.name, now) - interval * JITTER:
                continue
            self._due[duty.name] = now + interval
            try:
                duty.fn(term)
            except StorageError:
                raise  # the database, not this duty: the outage log tells it
            except Exception:  # one broken duty must not keep the others from running
                log.exception("leader duty %s failed; will try again in %.1fs",
                              duty.name, interval)


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

    def tick_duties(self) -> None:
        """The leader's tick, after a renewal: the duties that are due."""
        for service in self.running:
            if isinstance(service, Duties):
                service.tick()

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
