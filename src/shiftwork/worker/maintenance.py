"""Background duties: heartbeat, rescue of expired leases, leadership and retention."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..states import JobState
from .service import Service

if TYPE_CHECKING:
    from ..app import App

log = logging.getLogger("shiftwork.worker")

LEADER_NAME = "shiftwork.leader"


class Heartbeat(Service):
    """One statement renews the leases this worker holds and reports cancellations.

    It names the (job id, attempt) pairs ``held()`` returns, never "every running job of
    this worker": a job claimed by a call whose reply was lost is not known here, so its
    lease runs out and the rescuer brings it back (docs/architecture.md, lost replies).
    """

    name = "heartbeat"

    def __init__(self, app: App, worker_id: str, held: Callable[[], list[tuple[int, int]]],
                 on_beat: Callable[[list[tuple[int, int, bool]], float], None]) -> None:
        super().__init__(app.settings.heartbeat_interval)
        self.app = app
        self.worker_id = worker_id
        self.held = held
        self.on_beat = on_beat

    def tick(self) -> None:
        started = time.monotonic()
        renewed = self.app.store.jobs_heartbeat(
            self.worker_id, self.app.settings.lease_seconds, self.held())
        self.on_beat(renewed, started)


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


class Leader(Service):
    """Holds the leader lease and, while it does, runs the leader's duties.

    Correctness never depends on being leader (uniqueness in the database does);
    leadership only keeps the duties from running on every host at once.
    """

    name = "leader"

    def __init__(self, app: App, worker_id: str) -> None:
        super().__init__(app.settings.leader_ttl / 3)
        self.app = app
        self.worker_id = worker_id
        self.term: int | None = None
        self._last_prune = 0.0

    def tick(self) -> None:
        store = self.app.store
        term = store.leader_acquire(LEADER_NAME, self.worker_id, self.app.settings.leader_ttl)
        if term != self.term:
            if term is None:
                self.app.events.emit("leader.lost", worker_id=self.worker_id, term=self.term)
            else:
                self.app.events.emit("leader.elected", worker_id=self.worker_id, term=term)
            self.term = term
        if term is None:
            return
        now = time.monotonic()
        if now - self._last_prune >= self.app.settings.prune_interval:
            self._last_prune = now
            s = self.app.settings
            pruned = store.jobs_prune(s.retention_finished, s.retention_dead)
            store.workers_prune(max(3 * s.heartbeat_interval, s.lease_seconds))
            store.effect_keys_prune()
            if pruned:
                log.info("pruned %d finished jobs", pruned)
        for duty in list(self.app.leader_duties):
            duty(term)

    def stop(self, timeout: float = 5.0) -> None:
        super().stop(timeout)
        if self.term is not None:
            try:
                self.app.store.leader_release(LEADER_NAME, self.worker_id)
            except Exception:
                log.debug("could not release leadership", exc_info=True)
            self.term = None
