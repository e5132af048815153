"""shiftwork: background jobs, distributed cron and durable workflows on your database."""

from .app import App
from .clock import Clock, FakeClock, SystemClock
from .compose import Chain, Group
from .context import JobContext
from .errors import (
    CommitUnknownError,
    ConfigurationError,
    DependencyError,
    IllegalTransitionError,
    JobCancelled,
    JobFailed,
    JobNotFoundError,
    JobPaused,
    LeaseLost,
    MemoryLimitExceeded,
    PayloadError,
    PayloadTooLargeError,
    RetryIn,
    ShiftworkError,
    Snooze,
    StorageError,
    UnknownTaskError,
)
from .handle import JobHandle
from .records import EnqueueResult, Job, QueueStats
from .retry import Backoff
from .settings import Settings
from .states import JobState
from .task import Task
from .workflow import Workflow

__all__ = [
    "App",
    "Backoff",
    "Chain",
    "Clock",
    "CommitUnknownError",
    "ConfigurationError",
    "DependencyError",
    "EnqueueResult",
    "FakeClock",
    "Group",
    "IllegalTransitionError",
    "Job",
    "JobCancelled",
    "JobContext",
    "JobFailed",
    "JobHandle",
    "JobNotFoundError",
    "JobPaused",
    "JobState",
    "LeaseLost",
    "MemoryLimitExceeded",
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
