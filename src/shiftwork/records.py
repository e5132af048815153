"""Records the storage layer returns that are not jobs themselves (jobs: job.py;
schedule records stay beside the schedule definitions, in schedule.py).

A bottom module (it imports only the state enums), so the store and everything above
it share these types without importing one another.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .states import StepStatus, WorkflowStatus


@dataclass(frozen=True)
class Touch:
    """What one fenced write to a running job's row learned."""

    cancel_requested: bool  # someone ran `jobs cancel` on it
    paused: bool  # its queue is paused
    yielded: bool = False  # the write also gave the job back to its (paused) queue


@dataclass(frozen=True)
class EffectRecord:
    """One effect key: the first run's result, kept until ``expires_at`` (then pruned)."""

    key: str
    result: Any  # decoded JSON; None also while the first run's transaction is open
    job_id: int | None
    attempt: int | None
    created_at: datetime
    expires_at: datetime


@dataclass(frozen=True)
class QueueMinute:
    """How many jobs of one queue finished, and how, in one minute (UTC)."""

    queue: str
    minute: datetime
    succeeded: int = 0
    retried: int = 0
    dead: int = 0
    cancelled: int = 0

    @property
    def finished(self) -> int:
        return self.succeeded + self.dead + self.cancelled


@dataclass(frozen=True)
class StepRecord:
    """One recorded workflow step (a step, sleep, wait, patch marker or compensation)."""

    name: str
    status: StepStatus  # a step's retry backoff is SLEEPING
    result: Any
    wake_at: datetime | None
    attempt: int
    updated_at: datetime | None
    position: int | None = None  # its place among the body's durable calls
    kind: str = "step"  # step | sleep | wait | patch | compensate
    digest: str | None = None  # of its arguments, checked on replay
    outcome: str | None = None  # None: ``result`` is the value; 'timed_out' | 'failed'
    tries: int = 0  # failures of a step with its own retry policy
    started_at: datetime | None = None

    def __post_init__(self) -> None:  # the engines hand back text
        object.__setattr__(self, "status", StepStatus(self.status))


@dataclass(frozen=True)
class WorkflowRun:
    """A workflow instance's durable status, read at the start of each run."""

    status: WorkflowStatus
    version: str
    cancelled: bool  # compensating (or ended) because of a cancel
    cause: str | None
    last_attempt: int | None
    cancel_requested: bool  # the job's flag, read in the same statement
    max_attempts: int

    def __post_init__(self) -> None:  # the engines hand back text
        object.__setattr__(self, "status", WorkflowStatus(self.status))


@dataclass(frozen=True)
class WorkflowSummary:
    """One line of ``workflows list``: the job and its workflow status."""

    id: int
    task: str
    state: str  # the job's state
    status: WorkflowStatus  # PENDING before its first run
    version: str | None
    steps: int
    created_at: datetime | None
    updated_at: datetime | None

    def __post_init__(self) -> None:  # the engines hand back text
        object.__setattr__(self, "status", WorkflowStatus(self.status))
