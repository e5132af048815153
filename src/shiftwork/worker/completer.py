"""Write outcomes in batches: one statement completes many jobs, fenced by attempt."""

from __future__ import annotations

import logging
import queue
import threading

# Real time, not the runtime's clock: flush() bounds a real wait on a Condition.
import time
from typing import TYPE_CHECKING

from shiftwork.core.backoff import Retrying
from shiftwork.core.crypt import is_sealed
from shiftwork.core.errors import StorageError
from shiftwork.core.service import ThreadService
from shiftwork.core.states import JobState
from shiftwork.model.outcome import Outcome
from shiftwork.store.rows import log_rejected
from shiftwork.worker.outage import OutageLog, outage_log

if TYPE_CHECKING:
    from shiftwork.runtime import Runtime

log = logging.getLogger("shiftwork.worker.completer")

#: Seconds of pauses before a batch of outcomes is given up on: what 60 tries doubling from
#: 0.1 s to 5 s came to, kept as a time now that the pauses are jittered.
GIVE_UP_AFTER = 276.0

_EVENT = {
    JobState.SUCCEEDED: "job.succeeded",
    JobState.RETRYING: "job.retried",
    JobState.DEAD: "job.dead",
    JobState.CANCELLED: "job.cancelled",
    JobState.SCHEDULED: "job.snoozed",
}


class Completer(ThreadService):
    """Takes outcomes from any thread; one thread writes them, as many per statement as wait."""

    name = "completer"
    outage: OutageLog  # always this database's (not None, as a service's may be)

    def __init__(self, rt: Runtime, max_batch: int = 1000) -> None:
        super().__init__()
        self.rt = rt
        self.max_batch = max_batch
        self.outage = outage_log(rt)  # says an outage in a few lines (worker/outage.py)
        self._queue: queue.SimpleQueue[Outcome | None] = queue.SimpleQueue()
        self._pending = 0
        # (job id, attempt) of outcomes not yet written: still this worker's, so the
        # heartbeat keeps their leases while a write waits out an outage.
        self._unwritten: set[tuple[int, int]] = set()
        self._cond = threading.Condition()

    def submit(self, outcome: Outcome) -> None:
        with self._cond:
            self._pending += 1
            self._unwritten.add((outcome.job_id, outcome.attempt))
        self._queue.put(outcome)

    def held(self) -> list[tuple[int, int]]:
        """The jobs whose outcomes wait to be written (the worker still holds them)."""
        with self._cond:
            return list(self._unwritten)

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until every submitted outcome has been written (or given up on)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._pending > 0:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def stop(self, timeout: float = 30.0) -> None:
        """Write what was submitted (up to ``timeout``), then end the thread."""
        if not self.stopping:
            self.flush(timeout)
        super().stop(timeout)

    def interrupt(self) -> None:
        self._queue.put(None)  # after what was submitted: the thread ends once past it

    def run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < self.max_batch:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self._queue.put(None)
                    break
                batch.append(item)
            self._write(batch)
            with self._cond:
                self._pending -= len(batch)
                self._unwritten.difference_update((o.job_id, o.attempt) for o in batch)
                self._cond.notify_all()

    def _write(self, batch: list[Outcome]) -> None:
        store = self.rt.store
        retrying = Retrying(0.1, 5.0)
        waited = 0.0
        failed = False
        while True:
            tried = self.outage.now()
            try:
                accepted = store.jobs.complete_many(batch)
                if failed:
                    # An earlier try may have committed without its reply reaching us (or,
                    # on SQLite, committed some of its transactions): outcomes already in
                    # their rows were written by us, not rejected.
                    missing = [o for o in batch if o.job_id not in accepted]
                    accepted |= store.jobs.written(missing)
                self.outage.ok()
                break
            except StorageError as exc:
                failed = True
                # Keep the outcomes: the heartbeat keeps their leases meanwhile. If a lease
                # lapses anyway, the rescuer takes over and the fence rejects this write.
                self.outage.failed(exc, f"recording {len(batch)} outcomes", tried)
                if waited >= GIVE_UP_AFTER:
                    log.error("gave up recording %d outcomes; their leases will expire and be "
                              "rescued", len(batch))
                    return
                pause = retrying.next_delay()
                waited += pause
                time.sleep(pause)
        stale = [(o.job_id, o.attempt) for o in batch if o.job_id not in accepted]
        if stale:
            log_rejected("completion", stale)
        emit = self.rt.events.emit
        for o in batch:
            if o.job_id not in accepted:
                emit("job.stale_write", job_id=o.job_id, attempt=o.attempt, task=o.task,
                     queue=o.queue, state=o.state.value)
                continue
            fields = {"job_id": o.job_id, "task": o.task, "queue": o.queue,
                      "attempt": o.attempt, "duration": round(o.duration, 6)}
            if o.peak_rss is not None:  # a limited attempt: its peak resident bytes
                fields["peak_rss"] = o.peak_rss
            if o.items is not None:
                fields["items"] = o.items
            if o.error is not None:
                message = o.error.get("message")  # an encrypted task's stays sealed
                fields["error"] = f"{o.error.get('type')}: " + (
                    "encrypted" if is_sealed(message) else str(message))
                fields["kind"] = o.error.get("kind")
                if o.state is not JobState.CANCELLED:
                    emit("job.failed", **fields)
            emit(_EVENT[o.state], **fields)
