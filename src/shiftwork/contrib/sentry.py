"""Report failed jobs to Sentry (the ``sentry`` extra: ``pip install 'shiftwork[sentry]'``).

Initialise the SDK as usual, then hand it the App's failures::

    import sentry_sdk
    from shiftwork.contrib.sentry import report_failures

    sentry_sdk.init(dsn="https://...")
    report_failures(app)                 # every failed attempt
    report_failures(app, on="dead")      # or only jobs that died (their last attempt)

It listens to the App's job events (``app.events``, as the metrics do), so it reports in
whatever process runs the jobs: put it beside ``sentry_sdk.init`` in the module the worker
imports. Each report is an error event with the task, queue, attempt, job id and the
job's tags as Sentry tags, the stored error's type and message as its exception and the
traceback text in the ``shiftwork`` context; events of one task and error type group
together (the fingerprint), whatever the job's arguments.

To find the job's tags and traceback it reads the job once per report (a lookup by id);
a job deleted meanwhile is still reported, without them.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Literal

from shiftwork.core.errors import ConfigurationError

if TYPE_CHECKING:
    from shiftwork.app import App

try:
    import sentry_sdk
except ImportError:  # the optional extra is not installed
    sentry_sdk = None  # type: ignore[assignment]

log = logging.getLogger("shiftwork.contrib.sentry")

When = Literal["attempt", "dead"]
WHEN: tuple[str, ...] = ("attempt", "dead")

# Sentry's bounds on a tag: keys up to 32 characters, values up to 200, on one line.
_TAG_VALUE = 200


class SentryReporter:
    """Sends ``app``'s job failures to Sentry until :meth:`close`."""

    def __init__(self, app: App, on: When = "attempt") -> None:
        if sentry_sdk is None:
            raise ConfigurationError("shiftwork.contrib.sentry needs the sentry extra: "
                                     "pip install 'shiftwork[sentry]'")
        if on not in WHEN:
            raise ConfigurationError(f"report_failures(on={on!r}): must be 'attempt' (every "
                                     "failed attempt) or 'dead' (only a job's last)")
        self.app = app
        self.on = on
        self._unsubscribe = app.events.subscribe(self._on_event)

    def close(self) -> None:
        self._unsubscribe()

    def _on_event(self, name: str, fields: dict[str, Any]) -> None:
        if self.on == "dead":
            if name != "job.dead":
                return
        elif name != "job.failed" and not (name == "job.dead" and "reason" in fields):
            # Every attempt: job.failed, and the deaths no attempt reported (a lease that
            # expired on the last attempt: the rescuer's job.dead, with its reason).
            return
        event: Any = self._event(name, fields)  # the SDK types it as its own TypedDict
        sentry_sdk.capture_event(event)

    def _event(self, name: str, fields: dict[str, Any]) -> dict[str, Any]:
        job_id = fields.get("job_id")
        attempt = fields.get("attempt")
        task = str(fields.get("task", ""))
        queue = str(fields.get("queue", ""))
        error, job_tags = self._stored(job_id, attempt)
        etype = str(error.get("type") or "") or str(fields.get("error", "")).split(":")[0] \
            or "Failure"
        message = str(error.get("message") or fields.get("reason") or fields.get("error") or "")
        dead = name == "job.dead"
        tags = {"shiftwork.task": task, "shiftwork.queue": queue,
                "shiftwork.attempt": str(attempt), "shiftwork.job_id": str(job_id),
                "shiftwork.outcome": "dead" if dead else "failed"}
        kind = error.get("kind") or fields.get("kind")
        if kind:
            tags["shiftwork.error_kind"] = str(kind)
        if job_tags:
            tags["shiftwork.tags"] = ",".join(job_tags)
        return {
            "level": "error",
            "logger": "shiftwork",
            "transaction": task,
            "exception": {"values": [{
                "type": etype, "value": message,
                "mechanism": {"type": "shiftwork", "handled": False}}]},
            "tags": {k: _tag(v) for k, v in tags.items()},
            "fingerprint": ["shiftwork", task, etype],
            "contexts": {"shiftwork": {
                "job_id": job_id, "task": task, "queue": queue, "attempt": attempt,
                "tags": job_tags, "event": name, "duration": fields.get("duration"),
                "traceback": error.get("traceback")}},
        }

    def _stored(self, job_id: Any, attempt: Any) -> tuple[dict[str, Any], list[str]]:
        """The attempt's error record and the job's tags, as stored."""
        if not isinstance(job_id, int):
            return {}, []
        try:
            job = self.app.get_job(job_id)
        except Exception as exc:  # deleted meanwhile, or the database is away: report anyway
            log.debug("job %s: reporting to Sentry without its stored error: %s", job_id, exc)
            return {}, []
        mine = [e for e in job.errors if e.get("attempt") == attempt]
        return (mine[-1] if mine else {}), job.tags


def _tag(value: str) -> str:
    flat = " ".join(value.split())
    return flat if len(flat) <= _TAG_VALUE else flat[:_TAG_VALUE - 1] + "…"


def report_failures(app: App, on: When = "attempt") -> SentryReporter:
    """Report ``app``'s failed jobs to Sentry: ``on="attempt"``, every failed attempt (retried
    or the last); ``on="dead"``, only jobs that died. ``.close()`` stops."""
    return SentryReporter(app, on)
