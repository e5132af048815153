"""Structured logs: one JSON object per line, with the event's fields.

``shiftwork worker APP --log-format json`` uses it; in your own process::

    from shiftwork.observe.logging import configure_logging
    configure_logging("INFO", "json")

Job events (``job.started``, ``job.succeeded``, ``job.failed``, ``job.retried``,
``job.dead``, ``job.rescued``, ...) carry ``event``, ``job_id``, ``task``, ``queue``,
``attempt`` and, once finished, ``duration`` (seconds) as top-level keys.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

from shiftwork.core.redact import redact
from shiftwork.core.safetext import escape_controls

# Attributes every LogRecord has; anything else came in through ``extra=``.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime",
                                                                          "taskName"}


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON line: time, level, logger, message, event fields."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                out[key] = value
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return redact(json.dumps(out, default=str, separators=(",", ":")))


class TextFormatter(logging.Formatter):
    """``time LEVEL logger: message``, one line per record whatever the message holds.

    Control characters in the message are escaped (a newline in a job's error cannot
    start a fake log line) and traceback lines are indented under their record;
    database passwords are redacted.
    """

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:
        return escape_controls(super().formatMessage(record))

    def formatException(self, ei: Any) -> str:
        text = super().formatException(ei)
        return "\n".join("    " + escape_controls(line, keep="\t")
                         for line in text.splitlines())

    def formatStack(self, stack_info: str) -> str:
        return "\n".join("    " + escape_controls(line, keep="\t")
                         for line in stack_info.splitlines())

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def configure_logging(level: str = "INFO", fmt: str = "text",
                      job_events: bool | None = None) -> None:
    """Set up the root logger: ``fmt`` is ``"text"`` or ``"json"``.

    ``job_events``: log every job event (started and succeeded are DEBUG by default);
    on by default with JSON, where a log pipeline usually wants them all.
    """
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        # (not the per-job log capture a running worker installed: worker/job_logs.py)
        if not getattr(old, "shiftwork_keep", False):
            root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(getattr(logging, level.upper(), logging.INFO))
    if job_events is None:
        job_events = fmt == "json"
    logging.getLogger("shiftwork.events").setLevel(logging.DEBUG if job_events else logging.NOTSET)
