"""shiftwork: background jobs, distributed cron and durable workflows on your database."""

from .app import App
from .clock import Clock, FakeClock, SystemClock
from .context import JobContext
from .errors import (
    CommitUnknownError,
    ConfigurationError,
    IllegalTransitionError,
    JobCancelled,
    JobNotFoundError,
    JobPaused,
    LeaseLost,
    PayloadError,
    PayloadTooLargeError,
    RetryIn,
    ShiftworkError,
    Snooze,
    StorageError,
    UnknownTaskError,
)
from .records import EnqueueResult, Job, QueueStats
from .retry import Backoff
from .settings import Settings
from .states import JobState
from .task import Task
from .workflow import Workflow

__all__ = [
    "App",
    "Backoff",
    "Clock",
    "CommitUnknownError",
    "ConfigurationError",
    "EnqueueResult",
    "FakeClock",
    "IllegalTransitionError",
    "Job",
    "JobCancelled",
    "JobContext",
    "JobNotFoundError",
    "JobPaused",
    "JobState",
    "LeaseLost",
    "PayloadError",
    "PayloadTooLargeError",
    "QueueStats",
    "RetryIn",
    "Settings",
    "ShiftworkError",
    "Snooze",
    "StorageError",
    "SystemClock",
    "Task",
    "UnknownTaskError",
    "Workflow",
]
