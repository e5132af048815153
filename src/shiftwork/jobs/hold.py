"""Holds and edits of one job: hold, release, run now, update (issue 30).

A held job (``JobState.HELD``) is never claimed: no claim statement names the state. A
running job cannot be held in place, so holding it sets ``hold_requested``: its current
attempt runs to its end, and if it would run again (a retry, a snooze, a workflow's
durable sleep or wait) the completion holds it instead (``jobs_complete_many``). A held
job keeps its unique key. Release puts it back where it belongs: scheduled while its
``run_at`` is ahead, else available (a workflow woken while held, now).

Every action is audited like a bulk action (jobs/bulk.py): a row of ``bulk_actions``
(who, when, what: ``id=7``) and a ``jobs.action`` event. An action that makes no sense
in the job's state raises ``JobStateError`` naming it.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from shiftwork.core.bounds import instant, whole
from shiftwork.core.errors import ConfigurationError, JobStateError
from shiftwork.core.names import check_queue
from shiftwork.core.states import FINAL, WAITING, JobState
from shiftwork.jobs.bulk import AUDIT_KEEP
from shiftwork.jobs.task import PRIORITY_MAX, PRIORITY_MIN
from shiftwork.model.filter import JobFilter

if TYPE_CHECKING:
    from shiftwork.jobs.bulk import BulkHost
    from shiftwork.model.records import Job

#: What may be edited (``app.update_job``) or made due now: the jobs not running yet.
EDITABLE = WAITING | {JobState.HELD}


def hold(app: BulkHost, job_id: int, who: str) -> Job:
    """Hold a waiting job, or ask a hold of a running one (see the module)."""
    job = app.store.jobs.get(job_id)
    if job.state in FINAL:
        raise JobStateError(f"job {job_id} is {job.state}: only waiting or running jobs can "
                            "be held")
    held, asked = app.store.console.hold_batch([job_id])
    return _audited(app, job_id, "hold", who, bool(held or asked),
                    refusal="only waiting or running jobs can be held")


def release(app: BulkHost, job_id: int, who: str) -> Job:
    """Release a held job (or withdraw the hold asked of a running one)."""
    job = app.store.jobs.get(job_id)
    if job.state is not JobState.HELD and not job.hold_requested:
        raise JobStateError(f"job {job_id} is {job.state}: it is not held")
    released, withdrawn = app.store.console.release_batch([job_id])
    return _audited(app, job_id, "release", who, bool(released or withdrawn),
                    refusal="it is not held")


def run_now(app: BulkHost, job_id: int, who: str) -> Job:
    """Make a scheduled, retrying or held job due now (a held one is released)."""
    job = app.store.jobs.get(job_id)
    if job.state not in EDITABLE:
        raise JobStateError(f"job {job_id} is {job.state}: only waiting or held jobs can be "
                            "run now (retry a dead or cancelled one)")
    moved = app.store.console.run_now_batch([job_id])
    return _audited(app, job_id, "run_now", who, bool(moved),
                    refusal="only waiting or held jobs can be run now")


def update(app: BulkHost, job_id: int, who: str, *, run_at: datetime | None = None,
           priority: int | None = None, queue: str | None = None) -> Job:
    """Change a waiting or held job's ``run_at``, ``priority`` or ``queue`` (those given),
    checked as an enqueue checks them."""
    changes: dict[str, Any] = {}
    if run_at is not None:
        changes["run_at"] = instant(run_at, "update_job: run_at")
    if priority is not None:
        changes["priority"] = whole(priority, "update_job: priority", PRIORITY_MIN,
                                    PRIORITY_MAX)
    if queue is not None:
        changes["queue"] = check_queue(queue)
    if not changes:
        raise ConfigurationError("update_job: give run_at, priority or queue")
    job = app.store.jobs.get(job_id)
    if job.state not in EDITABLE:
        raise JobStateError(f"job {job_id} is {job.state}: only waiting or held jobs can be "
                            "updated")
    moved = app.store.console.update_waiting(job_id, changes.get("run_at"),
                                             changes.get("priority"), changes.get("queue"))
    said = " ".join(f"{k}={v.isoformat() if isinstance(v, datetime) else v}"
                    for k, v in changes.items())
    return _audited(app, job_id, "update", who, moved, detail=said,
                    refusal="only waiting or held jobs can be updated")


def _audited(app: BulkHost, job_id: int, action: str, who: str, done: bool, *,
             refusal: str, detail: str = "") -> Job:
    """Record the action (who, when, what), then the job as it is now; a statement that
    moved nothing met the job in another state meanwhile: refused, as before it."""
    text = JobFilter(id=job_id).describe() + (f" {detail}" if detail else "")
    console = app.store.console
    console.bulk_actions_add(who, action, text, 1, int(done))
    console.bulk_actions_prune(AUDIT_KEEP)
    app.events.emit("jobs.action", action=action, who=who, job_id=job_id, detail=detail,
                    done=done)
    job = app.store.jobs.get(job_id)
    if not done and not (action == "hold" and job.state is JobState.HELD):
        raise JobStateError(f"job {job_id} is {job.state}: {refusal}")
    return job
