"""Delivering an event to a workflow: ``app.send_event``, and a member's report to its
parent (children.py), on the same checks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shiftwork.core.payload import MAX_EVENT_KEY, MAX_EVENT_NAME, check_label, encode_json
from shiftwork.workflow.errors import WorkflowError

if TYPE_CHECKING:
    from shiftwork.runtime import Runtime


def send_event(rt: Runtime, workflow_id: int, name: str, payload: Any = None, *,
               key: str | None = None) -> int:
    """Store an event for a workflow (kept until a ``wait_for_event`` takes it); with
    ``key``, once per workflow, name and key."""
    check_label(name, "event name", MAX_EVENT_NAME)
    if key is not None:
        check_label(key, f"event {name!r}: key", MAX_EVENT_KEY)
    body = encode_json(payload, f"event {name!r}: payload",
                       rt.settings.limit("max_event_payload_bytes"))
    require_workflow(rt, workflow_id, f"event {name!r}")
    return rt.store.workflows.event_send(workflow_id, name, body, key)


def require_workflow(rt: Runtime, job_id: int, what: str) -> None:
    """Refuse an event (or update) for a job that is not a workflow: nothing would take it."""
    job = rt.store.jobs.get(job_id)  # JobNotFoundError names the id
    task = rt.registry.tasks.get(job.task)
    if task is not None:
        known = getattr(task, "workflow_version", None) is not None
    else:  # a task this app does not register: a workflow has begun a run
        known = rt.store.workflows.run_read(job_id) is not None
    if not known:
        raise WorkflowError(f"{what}: job {job_id} runs task {job.task!r}, which "
                            "is not a workflow; only workflows take events and updates")
