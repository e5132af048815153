"""Per-job logs: the records a job logs through :mod:`logging` (and ``ctx.log``) while it
runs, kept per attempt, bounded, and written to the store beside the job.

One handler on the root logger, installed once per process, reads which attempt (if any)
the logging thread or task is running from a context variable the executor sets around
the task function; elsewhere it does nothing. Each attempt keeps at most
``Settings.job_log_lines`` records and ``job_log_bytes`` bytes of them; past either, the
rest is counted and one line says how many were not kept. Records are written at the
attempt's end (before its outcome) and, while it runs, by the worker's ``LogShipper``
every second, so ``shiftwork jobs logs --follow`` sees them as they come.

A job run with the process executor logs in its child process: not captured (yet).
"""

from __future__ import annotations

import logging
import threading
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from shiftwork.core.payload import storable_text
from shiftwork.jobs.context import JOB_LOGGER  # ctx.log's: every other shiftwork.* logger is ours
from shiftwork.model.records import JobLogLine

if TYPE_CHECKING:
    from shiftwork.runtime import Runtime

log = logging.getLogger("shiftwork.worker.job_logs")
CUT = " …[cut: job_log_bytes]"


class JobLog:
    """One attempt's records: kept up to the limits, taken in batches to be written."""

    def __init__(self, job_id: int, attempt: int, max_lines: int, max_bytes: int) -> None:
        self.job_id = job_id
        self.attempt = attempt
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self.lines = 0
        self.bytes = 0
        self.dropped = 0
        self._noted = False
        self._pending: list[JobLogLine] = []
        self._lock = threading.Lock()

    def add(self, record: logging.LogRecord) -> None:
        if self.max_lines == 0:
            return
        text = _text(record)
        size = len(text.encode("utf-8", "replace"))
        with self._lock:
            room = self.max_bytes - self.bytes
            if self.lines >= self.max_lines or room <= 0:
                self.dropped += 1
                return
            if size > room:  # the last one that fits, cut to the bytes left
                text = text.encode("utf-8", "replace")[:max(room - len(CUT.encode()), 0)
                                                       ].decode("utf-8", "ignore") + CUT
                size = room
            self.lines += 1
            self.bytes += size
            self._pending.append(JobLogLine(
                self.attempt, self.lines, datetime.fromtimestamp(record.created, UTC),
                storable_text(record.levelname, 20), storable_text(record.name, 200), text))

    def take(self, final: bool = False) -> list[JobLogLine]:
        """The records not written yet; at the attempt's end, with a line saying how many
        were not kept, if any."""
        with self._lock:
            out, self._pending = self._pending, []
            if final and self.dropped and not self._noted:
                self._noted = True
                out.append(JobLogLine(
                    self.attempt, self.lines + 1, datetime.now(UTC), "WARNING", "shiftwork",
                    f"{self.dropped} more records not kept (the limits per attempt: "
                    f"job_log_lines={self.max_lines}, job_log_bytes={self.max_bytes})"))
            return out

    def has_pending(self) -> bool:
        """Anything to write at the attempt's end (records, or the count of dropped ones)."""
        with self._lock:
            return bool(self._pending) or (self.dropped > 0 and not self._noted)

    def put_back(self, lines: list[JobLogLine]) -> None:
        """A write failed: keep them for the next one."""
        with self._lock:
            self._pending[:0] = lines


def _text(record: logging.LogRecord) -> str:
    try:
        text = record.getMessage()
    except Exception:  # a bad format string in user code: keep what was given
        text = f"{record.msg!r} % {record.args!r}"
    if record.exc_info:
        text += "\n" + logging.Formatter().formatException(record.exc_info)
    elif record.exc_text:
        text += "\n" + record.exc_text
    # NUL (PostgreSQL text refuses it) and lone surrogates escaped: one odd record never
    # costs its batch.
    return storable_text(text, len(text))



CURRENT: ContextVar[JobLog | None] = ContextVar("shiftwork_job_log", default=None)


class JobLogHandler(logging.Handler):
    """Hands each record to the attempt running in the logging thread or task."""

    def handle(self, record: logging.LogRecord) -> bool:
        # No handler lock: each JobLog has its own (this runs for every record logged).
        job_log = CURRENT.get()
        if job_log is not None and (record.name == JOB_LOGGER
                                    or not record.name.startswith("shiftwork")):
            job_log.add(record)
        return True

    def emit(self, record: logging.LogRecord) -> None:
        self.handle(record)


_installed: JobLogHandler | None = None
_install_lock = threading.Lock()


def install() -> None:
    """The handler on the root logger, once per process (the executor calls it)."""
    global _installed
    with _install_lock:
        if _installed is None:
            _installed = JobLogHandler()
            _installed.shiftwork_keep = True  # type: ignore[attr-defined]  # (configure_logging)
        root = logging.getLogger()
        if _installed not in root.handlers:  # (again, if someone's logging set-up removed it)
            root.addHandler(_installed)


def new_log(rt: Runtime, job_id: int, attempt: int) -> JobLog:
    s = rt.settings
    return JobLog(job_id, attempt, s.job_log_lines, s.job_log_bytes)


class capturing:
    """Records logged in this thread or task (and tasks it starts) go to ``job_log``.

    A class, not ``@contextmanager``: it wraps every job, and a generator-based context
    manager cost ~4% of a draining worker's interpreter time."""

    __slots__ = ("_job_log", "_token")

    def __init__(self, job_log: JobLog) -> None:
        self._job_log = job_log

    def __enter__(self) -> None:
        self._token = CURRENT.set(self._job_log)

    def __exit__(self, *exc: object) -> None:
        CURRENT.reset(self._token)


def write_logs(rt: Runtime, job_log: JobLog, final: bool = False) -> None:
    """Write the attempt's records not written yet (one statement; none if none)."""
    lines = job_log.take(final)
    if not lines:
        return
    try:
        rt.store.job_logs.add(job_log.job_id, lines)
    except Exception:
        if final:
            log.warning("job %s: %d log records not written", job_log.job_id, len(lines),
                        exc_info=True)
        else:
            job_log.put_back(lines)
