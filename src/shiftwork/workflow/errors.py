"""Errors of durable workflows."""

from __future__ import annotations

from ..errors import LeaseLost, ShiftworkError

__all__ = ["CompensationFailed", "EventTimeout", "LeaseLost", "WorkflowError"]


class WorkflowError(ShiftworkError):
    """A workflow was written or used wrongly (a step name used twice, an async body...)."""


class EventTimeout(ShiftworkError):
    """``wait_for_event`` gave up: the event did not arrive before its timeout."""


class CompensationFailed(WorkflowError):
    """A compensating action failed while undoing a failed workflow."""
