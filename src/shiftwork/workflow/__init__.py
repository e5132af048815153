"""Durable workflows: recorded steps replayed after a crash, durable sleep, events, sagas."""

from shiftwork.workflow.aio import AsyncWorkflow
from shiftwork.workflow.context import Workflow
from shiftwork.workflow.errors import (
                     ChildFailed,
                     CompensationFailed,
                     EventTimeout,
                     LeaseLost,
                     NonDeterminismError,
                     StepFailed,
                     StepNameError,
                     UpdateRejected,
                     UpdateTimeout,
                     WorkflowCompensated,
                     WorkflowError,
                     WorkflowFailed,
)
from shiftwork.workflow.hooks import set_boundary_hook
from shiftwork.workflow.streams import StreamError

__all__ = ["AsyncWorkflow", "ChildFailed", "CompensationFailed", "EventTimeout", "LeaseLost",
           "NonDeterminismError", "StepFailed", "StepNameError", "StreamError",
           "UpdateRejected", "UpdateTimeout", "Workflow", "WorkflowCompensated",
           "WorkflowError", "WorkflowFailed", "set_boundary_hook"]
