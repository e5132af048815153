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
        rescued = self.app.store.jobs_rescue()
        dead = [job.id for job in rescued if job.state is JobState.DEAD]
        if dead:  # their dependents: cancelled, or run anyway (on_failure="run")
            self.app.store.deps_resolve(dead)
        for job in rescued:
            fields = {"job_id": job.id, "task": job.task, "queue": job.queue,
                      "attempt": job.attempt}
            self.app.events.emit("job.rescued", **fields, state=job.state.value)
            if job.state is JobState.DEAD:  # counted with the task's other deaths
                self.app.events.emit("job.dead", **fields, reason="lease expired")
