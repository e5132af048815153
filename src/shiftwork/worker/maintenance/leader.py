"""Leadership: one lease row in the database, renewed every ``leader_ttl / 3``. While
this worker holds it, its :class:`~shiftwork.worker.maintenance.maintainer.Maintainer`
runs the leader-only services; they are stopped when the lease is lost."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from shiftwork.core.service import Service
from shiftwork.store.fleet import LEADER_NAME
from shiftwork.worker.maintenance.maintainer import Maintainer

if TYPE_CHECKING:
    from shiftwork.runtime import Runtime

log = logging.getLogger("shiftwork.worker")


class Leader(Service):
    """Holds the leader lease; starts and stops the leader-only services with it.

    Correctness never depends on being leader (uniqueness in the database does);
    leadership only keeps the duties from running on every host at once.
    """

    name = "leader"

    def __init__(self, rt: Runtime, worker_id: str,
                 maintainer: Maintainer | None = None) -> None:
        super().__init__(rt.settings.leader_ttl / 3)
        self.rt = rt
        self.worker_id = worker_id
        self.maintainer = maintainer or Maintainer(list)
        self._term: int | None = None
        # A reading of the runtime's clock (a FakeClock moves it in tests), as the lease
        # it stands for is measured on the database's (core/clock.py).
        self._renewed = 0.0

    @property
    def term(self) -> int | None:
        """The term held, while recently renewed: a process paused past two thirds of
        the lease finds it stale (another worker may lead by now)."""
        if self._term is None:
            return None
        if self.rt.clock.monotonic() - self._renewed > self.rt.settings.leader_ttl * 2 / 3:
            return None
        return self._term

    def tick(self) -> None:
        term = self.rt.store.fleet.leader_acquire(LEADER_NAME, self.worker_id,
                                            self.rt.settings.leader_ttl)
        if term is not None:
            self._renewed = self.rt.clock.monotonic()
        if term == self._term:
            if term is not None:
                self.maintainer.tick_duties()
            return
        old, self._term = self._term, term
        if term is None:
            self.rt.events.emit("leader.lost", worker_id=self.worker_id, term=old)
            self.maintainer.lost()
        else:
            self.rt.events.emit("leader.elected", worker_id=self.worker_id, term=term)
            self.maintainer.outage = self.outage
            self.maintainer.elected()
            self.maintainer.tick_duties()

    def stop(self, timeout: float = 5.0) -> None:
        super().stop(timeout)
        self.maintainer.stop(timeout)
        if self._term is not None:
            try:
                self.rt.store.fleet.leader_release(LEADER_NAME, self.worker_id)
            except Exception:
                log.debug("could not release leadership", exc_info=True)
            self._term = None
