"""Errors of durable workflows, and the two signals the runner uses internally."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from shiftwork.core.errors import LeaseLost, ShiftworkError

#: How long a wait with no timeout sleeps: until woken by its event, in practice.
FOREVER = timedelta(days=3650)

__all__ = ["ChildFailed", "CompensationFailed", "EventTimeout", "LeaseLost", "NonDeterminismError",
           "StepFailed", "StepNameError", "UpdateRejected", "UpdateTimeout",
           "WorkflowCompensated", "WorkflowError", "WorkflowFailed"]


class WorkflowError(ShiftworkError):
    """A workflow was written or used wrongly (a step name used twice, a bad option...)."""


class NonDeterminismError(WorkflowError):
    """A replay called something other than what the history recorded at that place.

    The workflow stops (its job is dead, its history untouched) until the code is fixed
    (or guarded with ``wf.patched``) and the job retried.
    """


class StepNameError(NonDeterminismError):
    """A step or event name that cannot be stored (empty, too long, NUL, not valid text).

    A fault of the code, not of this run: the workflow stops as for a
    :class:`NonDeterminismError` (its job dead, its history untouched, nothing
    compensated), so the fixed code can take it up again when the job is retried.
    """


class EventTimeout(ShiftworkError):
    """``wait_for_event`` gave up: the event did not arrive before its timeout."""


class UpdateRejected(ShiftworkError):
    """The workflow's update handler refused the request (``handle.update``): it raised.

    ``type`` and ``message`` are the handler's exception's; nothing was recorded in the
    workflow's history.
    """

    def __init__(self, message: str, type: str = "", reason: str = "") -> None:
        super().__init__(message)
        self.type = type
        self.message = reason


class UpdateTimeout(ShiftworkError, TimeoutError):
    """``handle.update`` got no result in time. The request stays delivered (``update_id``):
    the workflow may still handle it, and ``app.workflows.updates(id)`` shows how."""

    def __init__(self, message: str, update_id: int) -> None:
        super().__init__(message)
        self.update_id = update_id


class StepFailed(ShiftworkError):
    """A step with its own retry policy spent its attempts; recorded, so replays raise it too."""


class ChildFailed(StepFailed):
    """A child workflow (``wf.child``) or a parallel call (``wf.parallel``) failed or was
    cancelled; recorded, so replays raise it too.

    ``errors`` holds one entry per failed member: ``{"step", "job", "type", "message"}``.
    """

    def __init__(self, message: str, errors: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.errors = errors or []


class WorkflowFailed(WorkflowError):
    """The workflow failed for good (compensations, if any, were run first)."""


class WorkflowCompensated(WorkflowFailed):
    """The workflow failed for good and every compensation ran: it ended ``compensated``."""


class CompensationFailed(WorkflowFailed):
    """A compensating action failed for good while undoing a failed workflow."""


class Suspend(BaseException):
    """A sleep or wait suspends the workflow (the runner turns it into a ``Snooze``).

    A BaseException, like ``JobCancelled`` and ``LeaseLost``: a body's ``except Exception``
    must not swallow a suspension and run on as if the sleep had passed.
    """

    def __init__(self, until: datetime, reason: str) -> None:
        super().__init__(reason)
        self.until = until
        self.reason = reason


class StopReplay(BaseException):
    """While compensating, the replay reached a call with no record: stop the body there."""
