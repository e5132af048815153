"""Write outcomes in batches: one statement completes many jobs, fenced by attempt."""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import TYPE_CHECKING

from ..errors import StorageError
from ..outcome import Outcome
from ..states import JobState

if TYPE_CHECKING:
    from ..app import App

log = logging.getLogger("shiftwork.worker.completer")

_EVENT = {
    JobState.SUCCEEDED: "job.succeeded",
    JobState.RETRYING: "job.retried",
    JobState.DEAD: "job.dead",
    JobState.CANCELLED: "job.cancelled",
    JobState.SCHEDULED: "job.snoozed",
}


class Completer:
    """Takes outcomes from any thread; one thread writes them, as many per statement as wait."""

    def __init__(self, app: App, max_batch: int = 1000) -> None:
        self.app = app
        self.max_batch = max_batch
        self._queue: queue.SimpleQueue[Outcome | None] = queue.SimpleQueue()
        self._pending = 0
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._loop, name="shiftwork-completer", daemon=True)
        self._stopped = False

    def start(self) -> None:
        self._thread.start()

    def submit(self, outcome: Outcome) -> None:
        with self._cond:
            self._pending += 1
        self._queue.put(outcome)

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
        if not self._stopped:
            self._stopped = True
            self.flush(timeout)
            self._queue.put(None)
            self._thread.join(timeout)

    def _loop(self) -> None:
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
                self._cond.notify_all()

    def _write(self, batch: list[Outcome]) -> None:
        delay = 0.1
        for _ in range(60):
            try:
                accepted = self.app.store.jobs_complete_many(batch)
                break
            except StorageError as exc:
                # Keep the outcomes: if the lease lapses meanwhile, the rescuer takes over
                # and this write will be rejected by its fence, which is correct.
                log.warning("could not record %d outcomes (%s); retrying in %.1fs",
                            len(batch), exc, delay)
                time.sleep(delay)
                delay = min(delay * 2, 5.0)
        else:
            log.error("gave up recording %d outcomes; their leases will expire and be rescued",
                      len(batch))
            return
        emit = self.app.events.emit
        for o in batch:
            if o.job_id not in accepted:
                emit("job.stale_write", job_id=o.job_id, attempt=o.attempt, task=o.task,
                     queue=o.queue, state=o.state.value)
                continue
            fields = {"job_id": o.job_id, "task": o.task, "queue": o.queue,
                      "attempt": o.attempt, "duration": round(o.duration, 6)}
            if o.error is not None:
                fields["error"] = f"{o.error.get('type')}: {o.error.get('message')}"
                if o.state is not JobState.CANCELLED:
                    emit("job.failed", **fields)
            emit(_EVENT[o.state], **fields)
