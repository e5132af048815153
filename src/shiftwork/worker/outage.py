"""One story per database outage in a worker's log.

Every part of a worker (producers, completer, heartbeat, listener, leader-only services)
meets the same outage at once. Each says so here instead of logging on its own: one
warning when the database is lost, at most one line per ``Settings.outage_log_every``
seconds while it stays down, and one line once calls work again, with the outage's
length. No tracebacks: a connection error's traceback says nothing its message does not.
(A 15 s outage once wrote 213 lines with 12 tracebacks from one worker, and nothing when it
was back.)

"Back" is said once the database has stayed back for ``SETTLED`` seconds: a server shutting
down closes its connections one by one, and a call on one not closed yet can work a few
milliseconds after another failed. Said at once, that call ended the outage ("back after
0.0s") and the next failure began a second one.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shiftwork.runtime import Runtime

log = logging.getLogger("shiftwork.worker")

#: Seconds of working calls, without a failure, before an outage is said to be over.
SETTLED = 1.0


class OutageLog:
    """Whether the database is out, as the worker's calls find it, said in few lines."""

    def __init__(self, monotonic: Callable[[], float], every: float) -> None:
        self._monotonic = monotonic
        self.every = every
        self._lock = threading.Lock()
        self._since: float | None = None  # when the first failing call failed
        self._said = 0.0  # when a line about this outage was last written
        self._failures = 0
        self._back_at: float | None = None  # when the last outage ended
        self._working_since: float | None = None  # calls work again since (not yet said)
        self.outages = 0  # outages seen (for tests and metrics)

    def _now(self) -> float:
        return self._monotonic()

    @property
    def down(self) -> bool:
        return self._since is not None

    def now(self) -> float:
        """The time to pass back as ``failed(started=)`` (this log's clock)."""
        return self._now()

    def failed(self, exc: Exception, what: str, started: float | None = None) -> None:
        """A call (``what``: "claim", "heartbeat", ...) that began at ``started`` (see
        :meth:`now`) failed with ``exc``. One that began before the last outage ended was
        part of that outage (it waited out a connection), not a new one: not said."""
        with self._lock:
            now = self._now()
            if (self._since is None and started is not None and self._back_at is not None
                    and started < self._back_at):
                return
            self._failures += 1
            if self._working_since is not None and (started is None
                                                    or started >= self._working_since):
                self._working_since = None  # not back after all: the same outage goes on
            if self._since is None:
                self._since = self._said = now
                self.outages += 1
                log.warning("database unreachable (%s: %s); retrying, and jobs wait until it "
                            "is back", what, exc)
            elif now - self._said >= self.every:
                self._said = now
                log.warning("database still unreachable after %.0fs (%d failed calls; the last, "
                            "%s: %s)", now - self._since, self._failures, what, exc)

    def ok(self) -> None:
        """A call worked: if the database was out, it is back once calls have kept working
        for ``SETTLED`` seconds (said then, with the outage's length up to the first call
        that worked)."""
        if self._since is None:  # the common case: one read, no lock
            return
        with self._lock:
            if self._since is None:
                return
            now = self._now()
            if self._working_since is None:
                self._working_since = now
            if now - self._working_since < SETTLED:
                return
            log.warning("database back after %.1fs (%d failed calls in the outage)",
                        self._working_since - self._since, self._failures)
            self._since, self._failures = None, 0
            self._back_at, self._working_since = self._working_since, None


_LOGS: weakref.WeakKeyDictionary[object, OutageLog] = weakref.WeakKeyDictionary()
_LOGS_LOCK = threading.Lock()


class _QuietPool(logging.Filter):
    """While an outage is being told, psycopg's pool keeps its own reconnect warnings (one
    per attempt, several a second) to itself: the outage's lines say it already."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno > logging.WARNING or not any(o.down for o in list(_LOGS.values()))


_POOL_FILTER = _QuietPool()


def outage_log(rt: Runtime) -> OutageLog:
    """The outage log of ``app``'s database, shared by every part of every worker on it in
    this process. (Keyed by the App, not its store: reading ``app.store`` connects.)"""
    with _LOGS_LOCK:
        found = _LOGS.get(rt)
        if found is None:
            pool_log = logging.getLogger("psycopg.pool")
            if _POOL_FILTER not in pool_log.filters:
                pool_log.addFilter(_POOL_FILTER)
            found = _LOGS[rt] = OutageLog(rt.clock.monotonic,
                                                 rt.settings.outage_log_every)
        return found
