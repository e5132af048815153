"""Every record the storage layer returns: jobs, schedules, workflow steps and runs,
fenced-write outcomes and per-minute counts.

A bottom module: at run time it imports only the state enums (the schedule words, from
model/schedule_values.py, for type checkers only). What the schedule component builds from
the store's rows (a ScheduleInfo with its definition, a firing's Applied) is
schedules/records.py's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from shiftwork.core.states import JobState, StepStatus, WorkflowStatus
from shiftwork.model.items import RunFigures as RunFigures  # re-exported: items.py owns it

if TYPE_CHECKING:
    from shiftwork.model.items import ItemsCheck
    from shiftwork.model.schedule_values import DeadManCheck, RunKind, RunStatus


# -- jobs ----------------------------------------------------------------------------------


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
    #: runs before this one that did not count as attempts (snoozes, suspensions, hand-backs)
    uncounted: int = 0
    #: bytes: the peak resident size of the last attempt, for a job with a memory ceiling
    #: (each failed attempt's own is its error record's ``peak_rss``)
    peak_rss: int | None = None

    @property
    def counted_attempt(self) -> int:
        """This attempt's number against ``max_attempts`` (``attempt`` counts every run)."""
        return self.attempt - self.uncounted


class HandBack(NamedTuple):
    """Why running jobs go back to their queue unrun (their attempt not counted): the
    kind, type and message of the error record the job keeps of it."""

    kind: str
    type: str
    message: str


SHUTDOWN = HandBack("handed_back", "Shutdown",
                    "worker shut down before the job finished; attempt not counted")


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
    #: runs that did not count as attempts (snoozes, workflow suspensions, hand-backs)
    uncounted: int = 0
    #: bytes: the peak resident size of the last attempt, for a job with a memory ceiling
    #: (each failed attempt's own is its error record's ``peak_rss``)
    peak_rss: int | None = None
    #: what its last finished attempt reported processing (``ctx.processed``); None: unsaid
    items: int | None = None

    @property
    def counted_attempt(self) -> int:
        """Attempts spent, the number bounded by ``max_attempts``; ``attempt`` counts every
        run (it fences each run's writes), including those that did not count."""
        return self.attempt - self.uncounted

    @property
    def attempt_peaks(self) -> list[tuple[int, int]]:
        """(attempt, peak resident bytes) of each measured attempt (those with a memory
        ceiling), oldest first: failed ones from their error records, and the last one
        from ``peak_rss`` when it did not fail (a success, a snooze)."""
        peaks = [(int(e["attempt"]), int(e["peak_rss"])) for e in self.errors
                 if isinstance(e.get("peak_rss"), int) and isinstance(e.get("attempt"), int)]
        if self.peak_rss is not None and not any(a == self.attempt for a, _ in peaks):
            peaks.append((self.attempt, self.peak_rss))
        return peaks

    @property
    def tags(self) -> list[str]:
        """The job's tags (kept in meta, tags.py's TAGS_META_KEY)."""
        tags = self.meta.get("tags") if isinstance(self.meta, dict) else None
        return [str(t) for t in tags] if isinstance(tags, list) else []


@dataclass(frozen=True)
class GroupStats:
    """One group's waiting and running jobs in one queue (the busiest are shown)."""

    queue: str
    group: str
    waiting: int  # available, scheduled or retrying
    running: int


@dataclass(frozen=True)
class QueueGroups:
    """How many groups of a queue have waiting or running jobs (one metric per queue)."""

    queue: str
    waiting: int  # groups with at least one waiting job
    running: int  # groups with at least one running job


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


class WaitingTask(NamedTuple):
    """How many jobs of one task wait in one queue, due or not, and since when."""

    queue: str
    task: str
    jobs: int
    oldest_created_at: datetime


@dataclass(frozen=True)
class WorkerInfo:
    id: str
    host: str
    pid: int
    queues: dict[str, int]
    started_at: datetime
    heartbeat_at: datetime
    # the task names it registers; None from a worker of an older release (it did not say)
    tasks: frozenset[str] | None = None


# -- schedules -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScheduleRun:
    """One recorded occurrence."""

    schedule: str
    fire_at: datetime
    kind: RunKind
    status: RunStatus
    reason: str | None
    job_id: int | None
    run_at: datetime | None
    recorded_at: datetime
    finished_at: datetime | None
    dms: DeadManCheck | None  # None: not checked yet
    items: int | None = None  # what its job reported processing; None: it did not say
    items_check: ItemsCheck | None = None  # the expect_items verdict; None: not made yet
    items_note: str | None = None  # the verdict's reason, in words


@dataclass(frozen=True)
class ScheduleRunLine:
    """An occurrence with its job as the schedule page shows it (the job's state, its
    last attempt's start and its end; None once the job is pruned)."""

    run: ScheduleRun
    job_state: JobState | None
    job_started_at: datetime | None
    job_finished_at: datetime | None = None

    @property
    def duration(self) -> float | None:
        """Seconds from its job's last start to its end (None while it runs or never ran);
        read from the job, as the occurrence's own end is copied there by the leader later."""
        end = self.job_finished_at or self.run.finished_at
        if end is None or self.job_started_at is None:
            return None
        return max(0.0, (end - self.job_started_at).total_seconds())


@dataclass(frozen=True)
class LateRun:
    """An occurrence the dead-man switch has just found late (alerted once)."""

    schedule: str
    fire_at: datetime
    status: RunStatus
    job_id: int | None
    expect_success_within: float


@dataclass(frozen=True)
class EmptyRun:
    """An occurrence the items check has just found empty (alerted once)."""

    schedule: str
    fire_at: datetime
    job_id: int | None
    items: int | None  # what it reported; None: it did not say (counted as 0)
    expect_items: int | None  # None: a rule (a callable) judged it
    reason: str  # the counts, or the rule's answer or error, in words


# -- workflows, fenced writes and counts ---------------------------------------------------


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


#: How long per-minute counts (QueueMinute, TaskMinute) are kept, in seconds: the
#: recorder writes them (observe/worker.py), the pruner deletes them after this.
MINUTES_KEPT = 24 * 3600.0


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
class TaskMinute:
    """How many jobs of one task finished in one minute (UTC), how, and the items the
    succeeded ones reported (``retried``: failed attempts that will run again)."""

    task: str
    minute: datetime
    succeeded: int = 0
    items: int = 0
    retried: int = 0
    dead: int = 0
    cancelled: int = 0


@dataclass(frozen=True)
class HistoryBucket:
    """Five minutes of one queue (``task == ""``) or one task (``queue == ""``), from the
    history rollup: finished counts by outcome, the run time of the jobs that finished
    in it (nearest-rank p50/p95 over ``runs`` jobs, seconds; None: none ran) and the
    age of the oldest due job when it closed (seconds; None: not sampled)."""

    queue: str
    task: str
    bucket: datetime  # its start (UTC); it covers five minutes
    succeeded: int = 0
    retried: int = 0
    dead: int = 0
    cancelled: int = 0
    runs: int = 0
    p50: float | None = None
    p95: float | None = None
    oldest_wait: float | None = None

    @property
    def finished(self) -> int:
        return self.succeeded + self.dead + self.cancelled

    @property
    def failures(self) -> int:
        """Failed attempts: retried ones and the ones that left the job dead."""
        return self.retried + self.dead

    def to_dict(self) -> dict[str, object]:
        return {"queue": self.queue, "task": self.task, "bucket": self.bucket.isoformat(),
                "succeeded": self.succeeded, "retried": self.retried, "dead": self.dead,
                "cancelled": self.cancelled, "failures": self.failures, "runs": self.runs,
                "p50_seconds": self.p50, "p95_seconds": self.p95,
                "oldest_wait_seconds": self.oldest_wait}


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


class JobLogLine(NamedTuple):
    """One record a job logged while it ran (``shiftwork jobs logs``, the job page)."""

    attempt: int
    seq: int  # its place in its attempt, from 1
    at: datetime
    level: str  # INFO, WARNING, ...
    logger: str
    message: str


@dataclass(frozen=True)
class WorkflowLine:
    """One line of the dashboard's workflows list: the instance, its job and the step it
    is at (its newest recorded one), which says what it waits for."""

    id: int
    task: str
    state: JobState  # the job's state
    status: WorkflowStatus
    version: str
    started_at: datetime  # its first run
    updated_at: datetime
    finished_at: datetime | None  # the job's
    run_at: datetime  # the job's next (or last) run
    step: str | None  # None: no step recorded yet
    step_kind: str | None
    step_status: StepStatus | None
    step_wake_at: datetime | None
    step_result: Any  # a child or parallel step's {"jobs": [...]}

    def __post_init__(self) -> None:  # the engines hand back text
        object.__setattr__(self, "state", JobState(self.state))
        object.__setattr__(self, "status", WorkflowStatus(self.status))
        if self.step_status is not None:
            object.__setattr__(self, "step_status", StepStatus(self.step_status))


@dataclass(frozen=True)
class WorkflowLive:
    """A workflow as its page's live refresh redraws it, read in one statement."""

    state: JobState
    created_at: datetime
    attempted_at: datetime | None
    finished_at: datetime | None
    run_at: datetime
    status: WorkflowStatus | None  # None before its first run
    steps: list[StepRecord]


@dataclass(frozen=True)
class WorkflowEvent:
    """An event sent to a workflow, and the step that took it (None: not taken yet)."""

    id: int
    name: str
    payload: Any
    key: str | None
    created_at: datetime
    consumed_step: str | None


class FinishedJob(NamedTuple):
    """A finished job as a waiter needs it: its state, result and last error."""

    id: int
    state: JobState
    result: Any
    error: dict[str, Any] | None


@dataclass(frozen=True)
class DepLink:
    """One dependency edge seen from one side: the other job, and the edge's state."""

    job_id: int
    task: str | None  # None: the other job was pruned
    state: JobState | None
    on_failure: str  # "cancel": do not run after a failed parent; "run": run anyway
    resolved: bool  # the parent finished and was counted


@dataclass(frozen=True)
class GroupInfo:
    """A group of jobs and how far it got (``shiftwork groups show``, ``g.progress()``)."""

    id: int
    total: int
    callback_id: int | None
    created_at: datetime
    counts: dict[str, int]  # jobs per state

    @property
    def done(self) -> int:
        """Members that succeeded."""
        return self.counts.get("succeeded", 0)

    @property
    def failed(self) -> int:
        """Members that finished without succeeding (dead or cancelled)."""
        return self.counts.get("dead", 0) + self.counts.get("cancelled", 0)

    @property
    def finished(self) -> bool:
        """Every member finished, whatever its outcome."""
        return self.done + self.failed >= self.total


@dataclass(frozen=True)
class BulkAction:
    """One bulk action by filter, as audited: who did what to which jobs, and how many."""

    at: datetime
    who: str
    action: str  # retry, cancel or delete
    filter: str  # JobFilter.describe()
    matched: int
    done: int


@dataclass(frozen=True, slots=True)
class TaskDefaults:
    """What a SQL enqueue of ``name`` takes when the call leaves it out."""

    name: str
    queue: str
    priority: int
    max_attempts: int
    timeout: float | None


@dataclass(frozen=True)
class CancelledBatch:
    """What one batch of a bulk cancel did."""

    cancelled: list[tuple[int, dict[str, Any]]]  # (id, meta): cancelled before they ran
    asked: list[int]  # running jobs asked to stop, started workflows woken to cancel
