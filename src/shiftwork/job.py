"""Job records as the storage layer reads and writes them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from .states import JobState


@dataclass(slots=True)  # not frozen: a frozen dataclass costs 5x as much to build (bulk enqueue)
class NewJob:
    """A job about to be inserted: arguments already validated and encoded."""

    task: str
    queue: str
    args_json: str
    priority: int = 0
    max_attempts: int = 20
    run_at: datetime | None = None  # None: due now (database time)
    unique_key: str | None = None
    timeout: float | None = None
    meta_json: str = "{}"


class EnqueueResult(NamedTuple):  # a NamedTuple: 100,000 of these for one bulk enqueue
    """What enqueue returns for each job."""

    id: int
    created: bool  # False: a job with the same unique key was already active


class RescuedJob(NamedTuple):
    """A job whose lease expired, and what it became (available again, or dead)."""

    id: int
    state: JobState
    task: str
    queue: str
    attempt: int


@dataclass(frozen=True)
class ClaimedJob:
    """What a worker needs to run one attempt."""

    id: int
    task: str
    queue: str
    args: list[Any]
    kwargs: dict[str, Any]
    attempt: int
    max_attempts: int
    timeout: float | None
    checkpoint: Any = None
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Job:
    """A full job row, for inspection (command, dashboard, API)."""

    id: int
    task: str
    queue: str
    state: JobState
    args: list[Any]
    kwargs: dict[str, Any]
    priority: int
    attempt: int
    max_attempts: int
    run_at: datetime
    created_at: datetime
    attempted_at: datetime | None
    finished_at: datetime | None
    lease_expires_at: datetime | None
    worker_id: str | None
    unique_key: str | None
    timeout: float | None
    errors: list[dict[str, Any]]
    result: Any
    progress: Any
    checkpoint: Any
    cancel_requested: bool
    meta: dict[str, Any]


@dataclass(frozen=True)
class QueueStats:
    """One queue's counts, as ``shiftwork queues`` shows them."""

    queue: str
    available: int  # waiting and due
    scheduled: int  # waiting for a future run_at (delayed or backing off)
    running: int
    succeeded: int
    dead: int
    cancelled: int
    oldest_waiting_age: float | None  # seconds the longest-waiting due job has waited
    paused: bool = False


@dataclass(frozen=True)
class WorkerInfo:
    id: str
    host: str
    pid: int
    queues: dict[str, int]
    started_at: datetime
    heartbeat_at: datetime
