"""shiftwork: background jobs, distributed cron and durable workflows on your database."""

from shiftwork.app import App
from shiftwork.composition.compose import Chain, Group
from shiftwork.core.backoff import Backoff
from shiftwork.core.clock import Clock, FakeClock, SystemClock
from shiftwork.core.control import RetryIn, Snooze
from shiftwork.core.crypt import Keys
from shiftwork.core.errors import (
    CommitUnknownError,
    ConfigurationError,
    DependencyError,
    EncryptionKeyError,
    EncryptionUnavailableError,
    JobCancelled,
    JobFailed,
    JobNotFoundError,
    JobPaused,
    JobStateError,
    LeaseLost,
    MemoryLimitExceeded,
    PayloadError,
    PayloadTooLargeError,
    ShiftworkError,
    StorageError,
    UnknownTaskError,
)
from shiftwork.core.settings import Settings
from shiftwork.core.states import JobState
from shiftwork.jobs.batch_item import BatchItem
from shiftwork.jobs.batching import Batch
from shiftwork.jobs.context import JobContext
from shiftwork.jobs.handle import JobHandle
from shiftwork.jobs.task import Task
from shiftwork.model.records import EnqueueResult, Job, QueueStats
from shiftwork.workflow import Workflow

__all__ = [
    "App",
    "Backoff",
    "Batch",
    "BatchItem",
    "Chain",
    "Clock",
    "CommitUnknownError",
    "ConfigurationError",
    "DependencyError",
    "EncryptionKeyError",
    "EncryptionUnavailableError",
    "EnqueueResult",
    "FakeClock",
    "Group",
    "Job",
    "JobCancelled",
    "JobContext",
    "JobFailed",
    "JobHandle",
    "JobNotFoundError",
    "JobPaused",
    "JobState",
    "JobStateError",
    "Keys",
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
