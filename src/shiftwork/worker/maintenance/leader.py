"""Leadership: one lease row in the database; while this worker holds it, it runs the
leader's duties (pruning, the history rollup, and whatever features register, such as
the scheduler)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from shiftwork.core.service import Service
from shiftwork.observe.rollup import HistoryRollup
from shiftwork.store.fleet import LEADER_NAME
from shiftwork.worker.maintenance.pruner import Pruner

if TYPE_CHECKING:
    from shiftwork.runtime import Runtime

log = logging.getLogger("shiftwork.worker")


class Leader(Service):
    """Holds the leader lease and, while it does, runs the leader's duties.

    Correctness never depends on being leader (uniqueness in the database does);
    leadership only keeps the duties from running on every host at once.
    """

    name = "leader"

    def __init__(self, rt: Runtime, worker_id: str) -> None:
        super().__init__(rt.settings.leader_ttl / 3)
        self.rt = rt
        self.worker_id = worker_id
        self.term: int | None = None
        self.pruner = Pruner(rt)
        self.history = HistoryRollup(rt.store, rt.clock, rt.settings)

    def tick(self) -> None:
        store = self.rt.store
        term = store.fleet.leader_acquire(LEADER_NAME, self.worker_id, self.rt.settings.leader_ttl)
        if term != self.term:
            if term is None:
                self.rt.events.emit("leader.lost", worker_id=self.worker_id, term=self.term)
            else:
                self.rt.events.emit("leader.elected", worker_id=self.worker_id, term=term)
            self.term = term
        if term is None:
            return
        self.pruner.maybe_prune()
        for duty in list(self.rt.registry.leader_duties):
            duty(term)
        self.history.tick(term)  # last: a slow catch-up never delays the scheduler

    def stop(self, timeout: float = 5.0) -> None:
        super().stop(timeout)
        if self.term is not None:
            try:
                self.rt.store.fleet.leader_release(LEADER_NAME, self.worker_id)
            except Exception:
                log.debug("could not release leadership", exc_info=True)
            self.term = None
