"""What the leader does: the services its maintainer starts on each election."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from shiftwork.core.service import LeaderTerm, Lifecycle
from shiftwork.observe.rollup import HistoryRollup
from shiftwork.registry import LeaderDuty
from shiftwork.schedules.scheduler import Scheduler
from shiftwork.worker.maintenance.maintainer import Duties
from shiftwork.worker.maintenance.pruner import Pruner

if TYPE_CHECKING:
    from shiftwork.runtime import Runtime


def leader_services(rt: Runtime, worker_id: str, leader: LeaderTerm,
                    reconciled: threading.Event) -> list[Lifecycle]:
    """The scheduler's passes (once this worker has reconciled the declared schedules),
    retention, the history rollup, and the duties features registered."""
    every_tick = rt.settings.leader_ttl / 3
    pruner = Pruner(rt)
    rollup = HistoryRollup(rt.store, rt.clock, rt.settings)
    duties = [LeaderDuty("pruner", lambda term: pruner.prune(), rt.settings.prune_interval),
              LeaderDuty("history", rollup.tick, every_tick),
              *rt.registry.leader_duties]
    return [Scheduler(rt, worker_id, leader, reconciled),
            Duties(duties, every_tick, leader)]
