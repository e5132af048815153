"""The rescuer: jobs whose lease expired go back to waiting (or dead)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..states import JobState
from .service import Service

if TYPE_CHECKING:
    from ..app import App


class Rescuer(Service):
    """Every worker rescues expired leases: no single process is needed for recovery."""

    name = "rescuer"

    def __init__(self, app: App) -> None:
        super().__init__(app.settings.rescue_interval)
        self.app = app

    def tick(self) -> None:
        for job in self.app.store.jobs_rescue():
            fields = {"job_id": job.id, "task": job.task, "queue": job.queue,
                      "attempt": job.attempt}
            self.app.events.emit("job.rescued", **fields, state=job.state.value)
            if job.state is JobState.DEAD:  # counted with the task's other deaths
                self.app.events.emit("job.dead", **fields, reason="lease expired")
