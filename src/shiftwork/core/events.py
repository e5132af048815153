"""Named events: structured logs for people, hooks for metrics and for tests that wait.

Tests wait on events instead of sleeping; metrics subscribe instead of polling.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger("shiftwork.events")

Listener = Callable[[str, dict[str, Any]], None]

#: Events and the log level they are written at.
LEVELS = {
    "job.started": logging.DEBUG,
    "job.succeeded": logging.DEBUG,
    "job.failed": logging.WARNING,
    "job.retried": logging.INFO,
    "job.dead": logging.ERROR,
    "job.cancelled": logging.INFO,
    "job.snoozed": logging.DEBUG,
    "job.rescued": logging.WARNING,
    "job.stale_write": logging.WARNING,
    "job.handed_back": logging.INFO,
    "job.passed_over": logging.WARNING,
    "job.released": logging.WARNING,
    "job.rate_limited": logging.INFO,
    "worker.started": logging.INFO,
    "worker.stopping": logging.INFO,
    "worker.stopped": logging.INFO,
    "leader.elected": logging.INFO,
    "leader.lost": logging.WARNING,
    "schedule.fired": logging.DEBUG,
    "schedule.skipped": logging.INFO,
    "schedule.missed": logging.WARNING,
    "schedule.late": logging.ERROR,
    "schedule.empty": logging.ERROR,  # a run succeeded with fewer items than expect_items
    "schedule.run_failed": logging.WARNING,
    "schedule.cancel_other": logging.INFO,
    "schedule.paused": logging.INFO,
    "schedule.resumed": logging.INFO,
    "schedule.added": logging.INFO,
    "schedule.removed": logging.INFO,
    "jobs.bulk": logging.WARNING,  # a person acted on every job a filter matched
    "jobs.action": logging.WARNING,  # a person held, released, ran now or edited one job
}


class EventBus:
    def __init__(self) -> None:
        # A tuple, replaced on (un)subscribe: emit, twice a job, reads it without a copy.
        self._listeners: tuple[Listener, ...] = ()
        self._lock = threading.Lock()

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        with self._lock:
            self._listeners = (*self._listeners, listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    kept = list(self._listeners)
                    kept.remove(listener)
                    self._listeners = tuple(kept)

        return unsubscribe

    def emit(self, name: str, **fields: Any) -> None:
        level = LEVELS.get(name, logging.INFO)
        if log.isEnabledFor(level):
            text = " ".join(f"{k}={v}" for k, v in fields.items() if k != "traceback")
            log.log(level, "%s %s", name, text, extra={"event": name, **fields})
        for listener in self._listeners:
            try:
                listener(name, fields)
            except Exception:  # a broken listener must not break the worker
                log.exception("event listener failed on %s", name)
