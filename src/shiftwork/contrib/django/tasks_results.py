"""A shiftwork job read as a Django ``TaskResult``: its state as a status, its error
records as ``TaskError``\\ s, its attempts, its return value."""

from __future__ import annotations

import builtins
import dataclasses
from datetime import datetime
from typing import Any

from shiftwork.contrib.django import tasks_api as api
from shiftwork.core.errors import RECORDED_FAILURES
from shiftwork.core.states import JobState
from shiftwork.model.records import Job

#: The job's meta key under which the backend keeps what Django knows of a job and
#: shiftwork's row does not: the task's path, the backend's alias, the task's own
#: ``run_after`` and when it was enqueued (as Django saw it, so a result read back equals
#: the one enqueue returned, even inside a transaction no other connection sees yet).
META_KEY = "django_task"

_STATUS = {
    JobState.SCHEDULED: "READY", JobState.AVAILABLE: "READY",
    JobState.RETRYING: "READY",  # "ready to be executed again"
    JobState.HELD: "READY",  # on hold: it runs once released
    JobState.RUNNING: "RUNNING",
    JobState.SUCCEEDED: "SUCCESSFUL",
    JobState.DEAD: "FAILED", JobState.CANCELLED: "FAILED",  # "unable to start" too
}

#: Error records that are not an attempt's failure: a pause, a hand-back at shutdown, a
#: job passed over by a worker that does not know its task, a dependency's news.
_NOT_FAILURES = {"paused", "released", "handed_back", "unknown_task", "dependency"}


def status_of(state: JobState) -> Any:
    return api.TaskResultStatus[_STATUS[state]]


def exception_path(recorded: str) -> str:
    """shiftwork records builtin exceptions by bare name (``ValueError``), and the failures
    its SQL writes by theirs (``LeaseExpired``); Django wants a dotted path it can import
    (``builtins.ValueError``, ``shiftwork.core.errors.LeaseExpired``)."""
    if "." not in recorded and isinstance(getattr(builtins, recorded, None), type):
        return f"builtins.{recorded}"
    if recorded in RECORDED_FAILURES:
        return f"shiftwork.core.errors.{recorded}"
    return recorded


def errors_of(job: Job) -> list[Any]:
    return [api.TaskError(exception_class_path=exception_path(str(e.get("type") or "Exception")),
                          traceback=str(e.get("traceback") or e.get("message") or ""))
            for e in job.errors if e.get("kind") not in _NOT_FAILURES]


def _instant(text: Any) -> datetime | None:
    return datetime.fromisoformat(text) if isinstance(text, str) else None


def django_task_of(job: Job) -> Any:
    """The Django ``Task`` the job was enqueued as: the module-level task, with the
    queue, priority, ``run_after`` and backend of this job."""
    from django.utils.module_loading import import_string

    known = job.meta.get(META_KEY) or {}
    declared = import_string(known["path"])
    if not isinstance(declared, api.Task):
        raise api.TaskResultDoesNotExist(
            f"job {job.id}: {known['path']!r} is no longer a Django task")
    return dataclasses.replace(declared, queue_name=job.queue, priority=job.priority,
                               run_after=_instant(known.get("run_after")),
                               backend=known.get("backend", declared.backend))


def is_django_task(job: Job) -> bool:
    known = job.meta.get(META_KEY) if isinstance(job.meta, dict) else None
    return isinstance(known, dict) and isinstance(known.get("path"), str)


def result_of(job: Job) -> Any:
    """The ``TaskResult`` of a job the backend enqueued."""
    known = job.meta[META_KEY]
    attempts = max(job.counted_attempt, 0)
    # shiftwork keeps the worker of the latest attempt only: each attempt is named by it.
    workers = [job.worker_id or ""] * attempts
    result = api.TaskResult(
        task=django_task_of(job), id=str(job.id), status=status_of(job.state),
        enqueued_at=_instant(known.get("enqueued_at")) or job.created_at,
        started_at=job.attempted_at, last_attempted_at=job.attempted_at,
        finished_at=job.finished_at, args=job.args, kwargs=job.kwargs,
        backend=known.get("backend", "default"), errors=errors_of(job), worker_ids=workers)
    if job.state is JobState.SUCCEEDED:
        object.__setattr__(result, "_return_value", job.result)
    return result
