"""Errors of durable workflows."""

from __future__ import annotations

from ..errors import ShiftworkError


class WorkflowError(ShiftworkError):
    """A workflow was written or used wrongly (a step name used twice, an async body...)."""


class LeaseLost(ShiftworkError):
    """This attempt no longer holds its job (rescued and re-claimed elsewhere); it must stop."""


class EventTimeout(ShiftworkError):
    """``wait_for_event`` gave up: the event did not arrive before its timeout."""


class CompensationFailed(WorkflowError):
    """A compensating action failed while undoing a failed workflow."""
