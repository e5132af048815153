"""The rescuer: jobs whose lease expired go back to waiting (or dead)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from shiftwork.composition import settling
from shiftwork.core.service import Service
from shiftwork.core.states import JobState

if TYPE_CHECKING:
    from shiftwork.runtime import Runtime
    from shiftwork.worker.maintenance.leader import Leader


class Rescuer(Service):
    """The leader looks for expired leases every ``rescue_interval``; every other worker
    only once per ``leader_ttl``, so recovery needs no single process (a fleet without a
    leader still rescues) while the fleet's rescue statements stay about one leader's,
    not one per worker per interval (docs/performance.md, "Fleet")."""

    name = "rescuer"

    def __init__(self, rt: Runtime, leader: Leader | None = None) -> None:
        super().__init__(rt.settings.rescue_interval)
        self.rt = rt
        self.leader = leader
        self.backstop = max(1, math.ceil(rt.settings.leader_ttl / rt.settings.rescue_interval))
        self._ticks = 0

    def tick(self) -> None:
        self._ticks += 1
        leading = self.leader is None or self.leader.term is not None
        if not leading and self._ticks % self.backstop:
            return
        rescued = self.rt.store.jobs.rescue()
        dead = [job.id for job in rescued if job.state is JobState.DEAD]
        if dead:  # their dependents: cancelled, or run anyway (on_failure="run")
            settling.resolve(self.rt.store.deps, dead)
        for job in rescued:
            fields = {"job_id": job.id, "task": job.task, "queue": job.queue,
                      "attempt": job.attempt}
            self.rt.events.emit("job.rescued", **fields, state=job.state.value)
            if job.state is JobState.DEAD:  # counted with the task's other deaths
                self.rt.events.emit("job.dead", **fields, reason="lease expired")
