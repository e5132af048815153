"""The storage interface every engine implements, named noun-verb.

Everything above this seam (the app, the worker, the command) speaks only this
interface. Each engine keeps its SQL in ``.sql`` files beside its module. Every
method that moves a job between states is guarded in SQL by the state it
expects and, where a worker writes, by the attempt number (the fencing token).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

from shiftwork.core.states import JobState
from shiftwork.model.filter import JobFilter
from shiftwork.model.limits import ClaimFlow, ClaimKind, RateLimit
from shiftwork.model.new_job import Mark, NewJob
from shiftwork.model.outcome import Outcome
from shiftwork.model.records import (
    SHUTDOWN,
    BulkAction,
    CancelledBatch,
    ClaimedJob,
    DepLink,
    EffectRecord,
    EnqueueResult,
    FinishedJob,
    GroupInfo,
    GroupStats,
    HandBack,
    HistoryBucket,
    Job,
    JobLogLine,
    QueueGroups,
    QueueMinute,
    QueueStats,
    RescuedJob,
    StepRecord,
    TaskMinute,
    Touch,
    UpdateOutcome,
    WaitingTask,
    WorkerInfo,
    WorkflowEvent,
    WorkflowLine,
    WorkflowLive,
    WorkflowRun,
    WorkflowSummary,
    WorkflowUpdate,
)
from shiftwork.model.streams import StreamAppend, StreamKey, StreamPage
from shiftwork.model.table_health import TableHealth
from shiftwork.store.history import Counts, Durations
from shiftwork.store.jobs import Row
from shiftwork.store.sealed import SealedRow
from shiftwork.store.wakeups import WakeListener


class ScheduleStatements(Protocol):
    """An engine's schedule statements (its ``schedules.sql``), run on its connections.

    The transactions made of them, and every decision in them, are the schedule
    component's (schedules/firing.py, schedules/reconcile.py, schedules/stored.py).
    """

    def tx(self) -> AbstractContextManager[Any]:
        """A write transaction (SQLite: BEGIN IMMEDIATE)."""

    def read(self) -> AbstractContextManager[Any]:
        """A connection for reads."""

    def rows(self, c: Any, query: str, **params: Any) -> list[dict[str, Any]]:
        """Run the named statement on ``c`` (the engine adds the clock's instant); its rows
        as dicts, instants (``TIME_COLUMNS``, store/rows.py) as aware UTC datetimes."""

    def one(self, c: Any, query: str, **params: Any) -> dict[str, Any] | None:
        """:meth:`rows`' first row (None: no row)."""

    def json(self, value: Any) -> str:
        """A JSON text for a batch statement, instants in the engine's own form."""

    def instant(self, value: datetime | None) -> Any:
        """An instant as :meth:`json` writes it, for rows built in bulk."""


class ClaimTx(Protocol):
    """A claim's statements, bound to one connection inside its transaction: the steps
    flow/claim_limited.py and flow/claim_fair.py are made of (rows: ``jobs.sql``'s)."""

    def running(self, task: str) -> int:
        """A task's running jobs (takes the task's lock on Postgres)."""

    def claim(self, n: int, only_task: str | None, exclude: list[str]) -> list[Row]:
        """Claim up to ``n``: of ``only_task``, or of any task but ``exclude``."""

    def lock_task(self, task: str) -> None:
        """Make the claimers of ``task`` take turns (until commit)."""

    def bucket(self, key: str, rate: RateLimit) -> float:
        """The bucket's tokens now (made full if missing), its row locked."""

    def set_bucket(self, key: str, tokens: float) -> None: ...

    def group_running(self, task: str) -> dict[str, int]:
        """The running jobs of each group of ``task``."""

    def candidates(self, task: str, n: int, after: tuple[Any, Any, int] | None
                   ) -> list[Row]:
        """Up to ``n`` due jobs of ``task`` after (priority, run_at, id): (id, group,
        priority, run_at)."""

    def claim_ids(self, ids: list[int]) -> list[Row]:
        """Claim these jobs (chosen by the loop), in this order."""

    def fair_cursor(self) -> tuple[str, int]:
        """The last group served and how many of its turn it had (the row locked)."""

    def fair_set_cursor(self, group: str, served: int) -> None: ...

    def fair_groups(self, after: str, n: int) -> list[str]:
        """Up to ``n`` groups with waiting jobs after the key ``after``."""

    def fair_heads(self, groups: list[str], take: list[int], skip: list[int]) -> list[Row]:
        """Each group's first due jobs (id, group, task): ``take`` after ``skip``."""

    def fair_ungrouped(self, take: int, skip: int, peek: int) -> list[Row]:
        """Due jobs without a group, among the queue's first ``peek`` waiting."""


class ClaimStatements(Protocol):
    """An engine's claims (``store.claims``); which one a queue's limits call for is
    flow/claiming.py's choice."""

    def in_one_statement(self, kind: ClaimKind) -> bool:
        """Whether :meth:`claim` runs this kind (else: the loops, on :meth:`begin`)."""

    def claim(self, kind: ClaimKind, queue: str, limit: int, worker_id: str,
              lease_seconds: float, flow: ClaimFlow) -> list[ClaimedJob]:
        """A claim of a kind that is one statement."""

    def begin(self, queue: str, worker_id: str, lease_seconds: float
              ) -> AbstractContextManager[ClaimTx]:
        """A claim's transaction and its statements (rows to ``claimed_jobs`` after)."""


class DepsStatements(Protocol):
    """The dependency statements composition/settling.py runs (each engine's
    ``deps.sql``), each on the caller's connection ``c``, in :meth:`transaction`."""

    def transaction(self) -> AbstractContextManager[Any]: ...

    def watch(self, c: Any, ids: list[int]) -> dict[int, str]:
        """Mark jobs as watched; the state of each that exists."""

    def group_insert(self, c: Any, members: int) -> int:
        """A new group of ``members`` jobs; its id."""

    def insert_marked(self, c: Any, jobs: list[NewJob], marks: list[Mark]
                      ) -> list[EnqueueResult]:
        """Insert ``jobs`` with their marks (jobs awaited, watched, group)."""

    def link(self, c: Any, edges: list[tuple[int, int, str]]) -> None:
        """Write the edges (dependent, parent, on_failure)."""

    def set_callback(self, c: Any, group: int, callback: int, on_failure: str
                     ) -> tuple[int, bool] | None:
        """Make ``callback`` the group's; (group id, due already), None if it has one."""

    def resolve(self, c: Any, parent_ids: list[int]) -> None:
        """Resolve finished parents: their dependents' edges, their groups' counts."""

    def settle_groups(self, c: Any, group_ids: list[int]) -> None:
        """Release (or cancel) the callbacks of these due groups."""

    def sweep_parents(self, c: Any, limit: int) -> list[int]:
        """Finished parents with edges left open."""

    def sweep_groups(self, c: Any, limit: int) -> tuple[list[int], list[int]]:
        """Group members finished but not counted, and groups due but not settled."""

    # reads: groups, finished jobs, links
    def watch_jobs(self, ids: list[int]) -> tuple[list[FinishedJob], list[int]]:
        """Mark jobs as waited on; those already finished, and ids naming no job."""

    def finished(self, ids: list[int]) -> list[FinishedJob]: ...

    def links_of(self, job_id: int) -> tuple[list[DepLink], list[DepLink]]:
        """The jobs ``job_id`` runs after, and the jobs that run after it."""

    def input_of(self, job_id: int) -> Any:
        """A chain link's input: the result of the job it runs after."""

    def group_get(self, group_id: int) -> GroupInfo: ...

    def group_members(self, group_id: int) -> list[int]: ...

    def groups_prune(self, older_than: float, limit: int = 10_000) -> int:
        """Delete groups older than ``older_than`` seconds whose jobs were all pruned."""

    def groups_of_job(self, job_id: int) -> tuple[list[int], int | None]: ...

    def group_results(self, group_id: int) -> list[FinishedJob | None]: ...


class WorkflowStatements(Protocol):
    """Durable workflows' storage (``store.workflows``): instances, recorded steps, events."""

    def steps_get(self, job_id: int) -> dict[str, StepRecord]: ...

    def begin(self, job_id: int, attempt: int, version: str
                       ) -> tuple[WorkflowRun, dict[str, StepRecord]] | None:
        """Create the instance row on its first run; read it and its steps. None: lease lost."""

    def run_set(self, job_id: int, attempt: int, status: str, *, cancelled: bool,
                         cause: str | None = None, last_attempt: int | None = None,
                         extend_attempts: int | None = None) -> bool:
        """Record the instance's status (fenced); ``extend_attempts`` gives the job room."""

    def run_read(self, job_id: int) -> WorkflowRun | None: ...

    def step_record(self, job_id: int, attempt: int, name: str, status: str,
                             result_json: str | None, wake_at: datetime | None, *,
                             position: int | None = None, kind: str = "step",
                             digest: str | None = None, outcome: str | None = None,
                             tries: int = 0, started_at: datetime | None = None) -> bool | None:
        """Record a step, fenced by attempt: None if this attempt no longer holds the job,
        else whether a cancel was requested."""

    def event_take(self, job_id: int, attempt: int, name: str, step: str, *,
                            position: int | None = None, digest: str | None = None,
                            started_at: datetime | None = None) -> tuple[bool, Any]:
        """Consume the oldest pending event ``name`` and record it as ``step``, atomically."""

    def events_take(self, job_id: int, attempt: int, names: list[str], *,
                             started_at: datetime | None = None) -> list[tuple[bool, Any]]:
        """:meth:`workflow_event_take` for many events in one transaction, each recorded as
        the step of its own name (a join taking its members' reports); ``(False, None)``
        for a name with no pending event. Raises LeaseLost like the single take."""

    def event_find(self, job_id: int, name: str, key: str) -> int | None:
        """The id of the event sent to this workflow under ``name`` and ``key``, if any
        (a second send with that key would deliver nothing)."""

    def event_send(self, job_id: int, name: str, payload_json: str,
                            key: str | None = None, *,
                            join: tuple[str, int] | None = None) -> int:
        """Store an event for a workflow and wake it; a repeated ``key`` stores nothing.

        With ``join=(prefix, total)`` (a member's report to a parallel join; needs ``key``)
        the workflow is woken only once at least ``total`` events under ``key`` whose names
        start with ``prefix`` are stored, counted in the same transaction as the insert,
        under a lock on the workflow's row: one wake per join instead of one per member."""

    def cancel(self, job_id: int) -> bool:
        """Flag a started workflow for cancel and wake it; False if it is not one."""

    def summaries(self, status: str | None = None, task: str | None = None,
                       limit: int = 50) -> list[WorkflowSummary]: ...

    def page(self, status: str | None = None, task: str | None = None,
                       before: int | None = None, limit: int = 50) -> list[WorkflowLine]:
        """Workflows with an id below ``before``, newest first, each with its current step;
        ``task``: a part of the name (any case); ``status``: a workflow status or job state."""

    def events_list(self, job_id: int, limit: int = 100) -> list[WorkflowEvent]:
        """The newest events sent to a workflow, taken or not."""

    def live(self, job_id: int) -> WorkflowLive | None:
        """The job, its workflow status and steps, in one statement (None: no such job)."""

    # -- talking to a running workflow (workflow/talk.py) ------------------------------

    def state_set(self, job_id: int, attempt: int, key: str, value_json: str,
                  stamp: int) -> None:
        """Publish ``key`` (fenced by attempt); a lower ``stamp`` than the stored one (a
        replay's write of an earlier place in the body) changes nothing."""

    def state_get(self, job_id: int) -> dict[str, Any]:
        """Every key the workflow published, with its value."""

    def update_send(self, job_id: int, name: str, payload_json: str) -> int:
        """Store a pending update for an active workflow and wake it; its id."""

    def update_next(self, job_id: int, name: str) -> tuple[int, Any] | None:
        """The oldest pending update ``name``: (id, payload)."""

    def update_resolve(self, job_id: int, attempt: int, update_id: int, *, accepted: bool,
                       result_json: str | None, error_json: str | None, step: str,
                       position: int | None = None,
                       started_at: datetime | None = None) -> bool:
        """Resolve a pending update once, fenced by attempt (LeaseLost), and tell its
        caller; accepted, its result is recorded as the step ``step`` in the same
        transaction. False if it was resolved already."""

    def update_read(self, update_id: int) -> UpdateOutcome | None:
        """An update's status and outcome for its caller (None: no such update)."""

    def updates_list(self, job_id: int, limit: int = 100) -> list[WorkflowUpdate]:
        """The newest updates sent to a workflow, pending or resolved."""


class StreamStatements(Protocol):
    """Workflow streams (``store.streams``): values a workflow appends under a key, each in
    the transaction that records its step; read from an offset as they arrive."""

    def append(self, job_id: int, attempt: int, key: str, value_json: str | None, *,
               closed: bool, step: str, position: int, digest: str | None,
               started_at: datetime, max_values: int) -> StreamAppend | None:
        """Append a value (or the closing row) and record ``step`` (kind ``stream``), fenced
        by attempt, and wake the readers; nothing is written when the stream is closed or
        holds ``max_values`` values already. None: this attempt lost its lease."""

    def read(self, job_id: int, key: str, offset: int, limit: int) -> StreamPage:
        """Up to ``limit`` items from ``offset``, after the job's state."""

    def keys(self, job_id: int) -> list[StreamKey]:
        """The workflow's streams: each key, its values, whether it is closed."""


class RerunStatements(Protocol):
    """New runs made from a workflow's record (``store.reruns``): a fork's copied history,
    and continue-as-new's reset."""

    def fork_copy(self, source: int, target: int, position: int, version: str,
                  conn: Any) -> None:
        """Give the new job ``target`` the source's instance row (this ``version``), its
        body's records before ``position`` and their stream values, in ``conn``'s
        transaction (the one that inserted ``target``)."""

    def continue_as_new(self, job_id: int, attempt: int, args_json: str, version: str,
                        effect_prefix: str, generation: int) -> bool | None:
        """Reset the instance for its next run in one transaction, fenced by attempt: its
        steps, taken events, joins and its children's effect keys (``effect_prefix``)
        deleted, its generation set to ``generation`` (so a repeat sets the same), the
        job's arguments replaced. Returns the job's cancel flag; None: this attempt lost
        its lease."""

    def generation(self, job_id: int) -> int | None:
        """How many times the instance continued as new (None: no instance)."""


class ObserveStatements(Protocol):
    """What people and the leader read and roll up (``store.observe``): per-minute counts,
    the history buckets, the views of waiting and running work, search; and the discard
    of dead jobs (the dashboard's, beside its search)."""

    def queue_minutes_add(self, rows: list[QueueMinute]) -> None:
        """Add per-minute finished counts (an upsert that sums)."""

    def queue_minutes_list(self, since: datetime) -> list[QueueMinute]: ...

    def queue_minutes_prune(self, keep_seconds: float) -> int: ...

    def task_minutes_add(self, rows: list[TaskMinute]) -> None:
        """Add per-task, per-minute succeeded and item counts (upsert, summing)."""

    def task_minutes_since(self, since: datetime) -> dict[str, tuple[int, int]]:
        """Per task: jobs succeeded and items they reported since ``since``."""

    def task_minutes_prune(self, keep_seconds: float) -> int: ...

    # The history rollup (observe/rollup.py): what the leader reads and writes per bucket.

    def history_last(self) -> datetime | None:
        """The newest bucket written (None: none yet)."""

    def history_counts(self, since: datetime, until: datetime
                       ) -> tuple[dict[str, Counts], dict[str, Counts]]:
        """Finished counts per queue and per task of the minutes in [since, until)."""

    def history_durations(self, since: datetime, until: datetime
                          ) -> dict[tuple[str, str], Durations]:
        """p50/p95 run time of the jobs finished in [since, until), per queue
        (``(queue, "")``) and per task (``("", task)``)."""

    def history_waiting(self) -> list[tuple[str, str, datetime]]:
        """(queue, task, run_at of the oldest due job) for every queue and task waiting."""

    def history_add(self, rows: list[HistoryBucket]) -> None:
        """Write one bucket's rows in one transaction; rows already there are kept."""

    def history_list(self, since: datetime, queue: str | None = None,
                     task: str | None = None) -> list[HistoryBucket]:
        """Rows from ``since`` (None: any queue or task; ``""`` picks the other kind)."""

    def history_prune(self, keep_seconds: float) -> int: ...

    def workers_running(self) -> dict[str, int]:
        """Running jobs per worker id (a partial index)."""

    def jobs_waiting_by_task(self) -> list[WaitingTask]:
        """Waiting jobs (due or not) per queue and task: reads every waiting job."""

    def groups_busiest(self, queue: str | None = None, limit: int = 10) -> list[GroupStats]:
        """The groups with the most waiting and running jobs (of ``queue``, or every queue),
        busiest first: reads every waiting or running job that has a group."""

    def queue_group_counts(self) -> list[QueueGroups]:
        """Per queue, how many groups have waiting jobs and how many have running ones."""

    def jobs_search(self, text: str | None = None, state: JobState | None = None,
                    queue: str | None = None, limit: int = 50) -> list[Job]:
        """Newest first; ``text`` matches a job id, a task name or a unique key."""

    def jobs_discard(self, ids: list[int]) -> list[int]:
        """Delete dead jobs (deleting is not a state change); returns the ids deleted."""


class JobLogStatements(Protocol):
    """What a job logged while it ran (``store.job_logs``; deleted with the job)."""

    def add(self, job_id: int, lines: list[JobLogLine]) -> None:
        """Keep these records of ``job_id`` (nothing if the job is gone; a line kept
        already, by its attempt and seq, is kept once)."""

    def list_lines(self, job_id: int, attempt: int = 0, after: tuple[int, int] = (0, 0),
                      limit: int = 1000) -> list[JobLogLine]:
        """The job's records after ``(attempt, seq)`` in order; ``attempt`` 0: all."""


class FleetStatements(Protocol):
    """The fleet (``store.fleet``): the worker registry and the named leader lease."""

    def workers_upsert(self, worker_id: str, host: str, pid: int,
                       queues: dict[str, int], tasks: list[str] | None = None) -> None:
        """Register or refresh a worker: its queues and the task names it registers
        (None: not said, as by a worker of an older release)."""

    def workers_delete(self, worker_id: str) -> None: ...

    def workers_list(self) -> list[WorkerInfo]: ...

    def workers_prune(self, stale_after: float) -> int: ...

    def worker_back(self, c: Any, worker_id: str) -> None:
        """Register again, on ``c``, a worker whose heartbeat found its row gone."""

    def leader_acquire(self, name: str, owner: str, ttl: float) -> int | None:
        """Take or renew the named lease; returns the term held, or None."""

    def leader_release(self, name: str, owner: str) -> None: ...


class SealedStatements(Protocol):
    """Payload columns for a key rotation (``store.sealed``, store/sealed.py)."""

    def page(self, after: int, limit: int) -> list[SealedRow]: ...

    def reseal(self, changes: list[tuple[int, dict[str, tuple[str | None, str]]]]) -> int: ...


class ConsoleStatements(Protocol):
    """The operations console (``store.console``, store/console.py): pages of jobs by a
    filter, and the bulk actions on them."""

    def page(self, f: JobFilter, sort: str = "created", after: int | None = None,
                  limit: int = 50) -> list[Job]:
        """A page of the jobs ``f`` matches, newest first by ``sort``, after job ``after``."""

    def count_upto(self, f: JobFilter, cap: int) -> int:
        """How many jobs ``f`` matches, counted up to ``cap``."""

    def match_ids(self, f: JobFilter, after: int | None, limit: int) -> list[int]:
        """The next ``limit`` ids ``f`` matches after ``after``, in id order."""

    def retry_batch(self, ids: Sequence[int]) -> list[int]:
        """``jobs.retry`` for many ids at once; the ids moved."""

    def cancel_batch(self, ids: Sequence[int]) -> CancelledBatch:
        """``jobs.cancel`` for many ids in one transaction: what it cancelled or asked."""

    def delete_finished(self, ids: Sequence[int]) -> list[int]:
        """Delete the finished jobs among ``ids``; the ids deleted."""

    def hold_batch(self, ids: Sequence[int]) -> tuple[list[int], list[int]]:
        """Hold the waiting jobs among ``ids``, ask a hold of the running: (held, asked)."""

    def release_batch(self, ids: Sequence[int]) -> tuple[list[int], list[int]]:
        """Release the held among ``ids``, withdraw asked holds: (released, withdrawn)."""

    def run_now_batch(self, ids: Sequence[int]) -> list[int]:
        """Make the scheduled, retrying and held jobs among ``ids`` due now; those moved."""

    def update_waiting(self, job_id: int, run_at: datetime | None, priority: int | None,
                       queue: str | None) -> bool:
        """Edit a waiting or held job (None: unchanged); False if it is not one."""

    def bulk_actions_add(self, who: str, action: str, filter_text: str, matched: int,
                         done: int) -> None: ...

    def bulk_actions_list(self, limit: int = 20) -> list[BulkAction]: ...

    def bulk_actions_prune(self, keep: int) -> None: ...


class LongJobStatements(Protocol):
    """Long jobs (``store.long_jobs``): the fenced touch (checkpoint, progress, lease),
    paused queues, effect keys."""

    def touch(self, job_id: int, attempt: int, lease_seconds: float, *,
                   checkpoint: str | None = None, set_checkpoint: bool = False,
                   progress: str | None = None, yield_if_paused: bool = False,
                   conn: Any = None) -> Touch | None:
        """Save a checkpoint and/or progress and extend the lease, fenced by attempt.

        None when this attempt no longer holds the job. With ``yield_if_paused`` and the
        job's queue paused, the same transaction gives the job back to its queue.
        """

    def queues_set_paused(self, queue: str, paused: bool) -> None: ...

    def queues_paused(self) -> set[str]: ...

    def effect_keys_insert(self, key: str, job_id: int | None, attempt: int | None,
                           keep_seconds: float, result: str | None = None,
                           conn: Any = None) -> bool:
        """Record an effect key (JSON ``result``); False if the key is already recorded."""

    def effect_keys_set_result(self, key: str, result: str, conn: Any = None) -> None: ...

    def effect_keys_get(self, key: str, conn: Any = None) -> EffectRecord | None: ...

    def effect_keys_prune(self, limit: int = 10_000) -> int:
        """Delete effect keys past their retention; returns how many."""


class JobStatements(Protocol):
    """The jobs (``store.jobs``, ``<engine>/jobs.py``): insert, the plain claim,
    completion, heartbeat, rescue and hand-back (the hot path), the reads of jobs and
    queues, retry, cancel and prune, and the rate buckets the limited claims keep."""

    # -- the hot path ---------------------------------------------------------
    def insert(self, jobs: list[NewJob], conn: Any = None) -> list[EnqueueResult]:
        """Insert jobs in one round trip; an active job with the same unique key wins."""

    async def insert_async(self, jobs: list[NewJob], conn: Any = None
                           ) -> list[EnqueueResult]:
        """:meth:`insert` for asyncio code (Postgres: on an async connection pool,
        opened on first use; ``conn``: an async connection whose transaction they join)."""

    def insert_stream(self, count: int, jobs: Iterable[NewJob],
                      conn: Any = None) -> list[EnqueueResult]:
        """Insert ``count`` jobs without unique keys, built (validated) as they are read.

        All or nothing: a job that fails to build aborts the whole insert. Postgres
        streams them to the server while later ones are still being built.
        """

    def claim(self, queue: str, limit: int, worker_id: str,
              lease_seconds: float) -> list[ClaimedJob]:
        """Claim up to ``limit`` due jobs, no limit but ``limit``; each claim increments
        ``attempt``. (A claim under limits: flow/claiming.py, on ``store.claims``.)"""

    def rate_buckets_prune(self, prefix: str, idle_seconds: float) -> int:
        """Delete buckets whose key starts with ``prefix`` untouched for ``idle_seconds``
        (long enough to be full again, which is what a missing bucket means)."""

    def rate_limit_push_back(self, key: str, seconds: float) -> None:
        """Empty the bucket ``key`` and hold its refill for ``seconds`` (a 429 upstream)."""

    def rate_buckets(self) -> list[tuple[str, float, datetime]]:
        """Every rate bucket: (key, tokens as last written, when)."""

    def rate_buckets_clear(self, key: str) -> bool:
        """Delete the bucket ``key`` (full again, any hold gone); False if there was none."""

    def complete_many(self, outcomes: list[Outcome]) -> set[int]:
        """Record outcomes, fenced by attempt; returns the ids whose write took effect."""

    def heartbeat(self, worker_id: str, lease_seconds: float,
                  held: list[tuple[int, int]]) -> list[tuple[int, int, bool]]:
        """Extend the leases of the ``(job id, attempt)`` pairs this worker holds, in one
        statement, and mark the worker alive.

        Only the pairs named: a job claimed by a call whose reply was lost is unknown to
        the worker, so its lease runs out and the rescuer brings it back. Returns ``(job id,
        attempt, cancel requested)`` for each pair still held.
        """

    def release_unknown(self, worker_id: str, queue: str,
                        held: list[tuple[int, int]]) -> list[int]:
        """After a claim whose reply was lost: give back, without spending an attempt, the
        jobs of ``queue`` running under ``worker_id`` that are not in ``held``."""

    def written(self, outcomes: list[Outcome]) -> set[int]:
        """Of ``outcomes``, the ids whose row already shows that outcome (same attempt, same
        state): after a completion whose reply was lost, these were written, not stale."""

    def rescue(self, limit: int = 1000) -> list[RescuedJob]:
        """Move jobs whose lease expired back to waiting (or dead if attempts are spent)."""

    def hand_back(self, worker_id: str, jobs: list[tuple[int, int]],
                  reason: HandBack = SHUTDOWN) -> int:
        """Give running jobs back at once without spending an attempt: at shutdown, or
        from a worker that does not register their task."""

    # -- people and tools ------------------------------------------------------
    def get(self, job_id: int) -> Job: ...

    def retry(self, job_id: int) -> Job:
        """Make a dead, cancelled or waiting job available now."""

    def cancel(self, job_id: int) -> Job:
        """Cancel a waiting job at once, or ask the worker running it to stop."""

    def prune(self, finished_older_than: float, dead_older_than: float,
              limit: int = 10_000) -> int:
        """Delete finished jobs past their retention; returns how many."""

    def unique_keys_prune(self, limit: int = 10_000) -> int:
        """Delete the rows of unique_keys that can no longer hold their key (expired, or
        their job finished or gone); returns how many."""

    def queues_stats(self, include_finished: bool = True) -> list[QueueStats]:
        """Per queue counts and the oldest waiting job's age, from partial indexes only.

        ``include_finished`` also counts retained succeeded/cancelled jobs: a scan of
        history, for people; metrics and health pass False.
        """

    def insert_marked(self, c: Any, jobs: list[NewJob], marks: list[Mark]
                      ) -> list[EnqueueResult]:
        """Insert ``jobs`` on ``c`` with their marks (a graph's: ``store.deps``)."""

    def list(self, state: JobState | None = None, queue: str | None = None,
             task: str | None = None, limit: int = 50,
             before_id: int | None = None) -> list[Job]: ...


class Store(Protocol):
    engine: str  # "sqlite" or "postgres"

    @property
    def jobs(self) -> JobStatements:
        """The jobs: insert, claim, complete, heartbeat, reads (store/<engine>/jobs.py)."""

    @property
    def long_jobs(self) -> LongJobStatements:
        """Long jobs' statements (store/long_jobs.py)."""

    @property
    def console(self) -> ConsoleStatements:
        """The operations console's pages and bulk actions (store/console.py)."""

    @property
    def sealed(self) -> SealedStatements:
        """Payload columns, a page at a time, for a key rotation (store/sealed.py)."""

    @property
    def fleet(self) -> FleetStatements:
        """The worker registry and the leader lease (store/fleet.py)."""

    @property
    def job_logs(self) -> JobLogStatements:
        """Per-job logs (store/<engine>/job_logs.py)."""

    @property
    def observe(self) -> ObserveStatements:
        """Counts, history and views (store/<engine>/observe.py)."""

    @property
    def workflows(self) -> WorkflowStatements:
        """Durable workflows: instances, steps, events (store/<engine>/workflows.py)."""

    @property
    def streams(self) -> StreamStatements:
        """Workflow streams (store/<engine>/streams.py)."""

    @property
    def reruns(self) -> RerunStatements:
        """Forks and continue-as-new (store/<engine>/reruns.py)."""

    @property
    def claims(self) -> ClaimStatements:
        """The claim statements (which claim, and the loops of the limited ones: flow/)."""

    @property
    def deps(self) -> DepsStatements:
        """The dependency statements (the decisions on them: composition/settling.py)."""

    @property
    def schedules(self) -> ScheduleStatements:
        """The schedule statements (the transactions on them: schedules/stored.py)."""

    # -- life cycle ---------------------------------------------------------
    def migrate(self) -> list[int]:
        """Apply pending schema migrations; returns the versions applied."""

    def schema_version(self) -> int:
        """The newest migration applied (0: none, no tables yet). Writes nothing."""

    def schema_latest(self) -> int:
        """The newest migration this code knows."""

    def ping(self) -> None:
        """Raise StorageError when the database cannot be reached."""

    def close(self) -> None: ...

    async def aclose(self) -> None:
        """Close what ``jobs.insert_async`` opened (Postgres: the async pool)."""

    def connection_budget(self) -> int | None:
        """The most database connections this store holds at once (None: not pooled)."""

    def db_now(self) -> datetime:
        """The database's clock (or the injected fake clock)."""

    def table_health(self) -> TableHealth:
        """The jobs table's own health (dead tuples, vacuum, what holds the xmin horizon
        back; on SQLite the file's free pages and WAL), from catalog and statistics views
        only: never a read of the table."""

    def wakeups_listen(self, topic: str = "jobs") -> WakeListener | None:
        """Open a subscription to wake-ups: each names a queue that may have work (``"*"``:
        any). Raises StorageError when it cannot open; the caller retries (store/wakeups.py).
        ``topic="done"``: instead, wake-ups when a job someone waits on finished.
        None when there is nothing to listen on (PostgreSQL behind PgBouncer without a
        listen DSN): callers then find out by polling alone.
        """

    # -- visibility (store/<engine>/observe.py) -----------------------------------------
    # -- the operations console (store/console.py) ---------------------------------------
    # -- workers and leadership ---------------------------------------------------
    # -- long jobs: checkpoints, progress, paused queues, effect keys -------------------
    def transaction(self) -> AbstractContextManager[Any]:
        """A native connection (psycopg / sqlite3) in a transaction on the queue's database."""

    # -- durable workflows ------------------------------------------------------------
    # -- per-job logs (what a job logged while it ran; deleted with the job) ------------
    # -- composition: waiting on results, groups (store/deps.py; writing a graph and
    #    settling it: composition/settling.py) ------------------------------------------
    # -- test support ----------------------------------------------------------------
    def debug_install_transition_guard(self) -> None:
        """Install a trigger that rejects any state change not in TRANSITIONS."""
