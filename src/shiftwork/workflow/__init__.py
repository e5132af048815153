"""Durable workflows: recorded steps replayed after a crash, durable sleep, events, sagas."""

from .aio import AsyncWorkflow
from .context import Workflow
from .errors import (
                     ChildFailed,
                     CompensationFailed,
                     EventTimeout,
                     LeaseLost,
                     NonDeterminismError,
                     StepFailed,
                     StepNameError,
                     WorkflowCompensated,
                     WorkflowError,
                     WorkflowFailed,
)
from .hooks import set_boundary_hook

__all__ = ["AsyncWorkflow", "ChildFailed", "CompensationFailed", "EventTimeout", "LeaseLost",
           "NonDeterminismError", "StepFailed", "StepNameError", "Workflow", "WorkflowCompensated",
           "WorkflowError", "WorkflowFailed", "set_boundary_hook"]
