"""Durable workflows: recorded steps replayed after a crash, durable sleep, events, sagas."""

from .context import Workflow
from .errors import CompensationFailed, EventTimeout, LeaseLost, WorkflowError

__all__ = ["CompensationFailed", "EventTimeout", "LeaseLost", "Workflow", "WorkflowError"]
