"""The heartbeat: one statement renews the leases this worker holds."""

from __future__ import annotations

# Real time, not the runtime's clock: compared with Run.started (worker/run.py).
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from shiftwork.core.service import Service

if TYPE_CHECKING:
    from shiftwork.runtime import Runtime


class Heartbeat(Service):
    """One statement renews the leases this worker holds and reports cancellations.

    It names the (job id, attempt) pairs ``held()`` returns, never "every running job of
    this worker": a job claimed by a call whose reply was lost is not known here, so its
    lease runs out and the rescuer brings it back (docs/architecture.md, lost replies).
    """

    name = "heartbeat"

    def __init__(self, rt: Runtime, worker_id: str, held: Callable[[], list[tuple[int, int]]],
                 on_beat: Callable[[list[tuple[int, int, bool]], float], None]) -> None:
        super().__init__(rt.settings.heartbeat_interval)
        self.rt = rt
        self.worker_id = worker_id
        self.held = held
        self.on_beat = on_beat

    def tick(self) -> None:
        started = time.monotonic()
        renewed = self.rt.store.jobs.heartbeat(
            self.worker_id, self.rt.settings.lease_seconds, self.held())
        if self.outage is not None:  # a write that worked: the database is there
            self.outage.ok()
        self.on_beat(renewed, started)
