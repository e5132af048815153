"""The storage interface every engine implements, named noun-verb.

Everything above this seam (the app, the worker, the command) speaks only this
interface. Each engine keeps its SQL in ``.sql`` files beside its module. Every
method that moves a job between states is guarded in SQL by the state it
expects and, where a worker writes, by the attempt number (the fencing token).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

from shiftwork.core.states import JobState
from shiftwork.flow.limits import ClaimFlow
from shiftwork.model.filter import JobFilter
from shiftwork.model.items import ItemsCheck
from shiftwork.model.new_job import NewJob
from shiftwork.model.outcome import Outcome
from shiftwork.model.records import (
    SHUTDOWN,
    Applied,
    BulkAction,
    ClaimedJob,
    DepLink,
    EffectRecord,
    EmptyRun,
    EnqueueResult,
    FinishedJob,
    GroupInfo,
    GroupStats,
    HandBack,
    HistoryBucket,
    Job,
    JobLogLine,
    LateRun,
    QueueGroups,
    QueueMinute,
    QueueStats,
    RescuedJob,
    RunFigures,
    ScheduleInfo,
    ScheduleRun,
    ScheduleRunLine,
    StepRecord,
    TaskMinute,
    Touch,
    WaitingTask,
    WorkerInfo,
    WorkflowEvent,
    WorkflowLine,
    WorkflowLive,
    WorkflowRun,
    WorkflowSummary,
)
from shiftwork.model.table_health import TableHealth
from shiftwork.schedules.definition import Plan, RunStatus, ScheduleDef
from shiftwork.store.history import Counts, Durations
from shiftwork.store.wakeups import WakeListener


class Store(Protocol):
    engine: str  # "sqlite" or "postgres"

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
        """Close what :meth:`jobs_insert_async` opened (Postgres: the async pool)."""

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

    # -- jobs: the hot path ---------------------------------------------------
    def jobs_insert(self, jobs: list[NewJob], conn: Any = None) -> list[EnqueueResult]:
        """Insert jobs in one round trip; an active job with the same unique key wins."""

    async def jobs_insert_async(self, jobs: list[NewJob], conn: Any = None
                                ) -> list[EnqueueResult]:
        """:meth:`jobs_insert` for asyncio code (Postgres: on an async connection pool,
        opened on first use; ``conn``: an async connection whose transaction they join)."""

    def jobs_insert_stream(self, count: int, jobs: Iterable[NewJob],
                           conn: Any = None) -> list[EnqueueResult]:
        """Insert ``count`` jobs without unique keys, built (validated) as they are read.

        All or nothing: a job that fails to build aborts the whole insert. Postgres
        streams them to the server while later ones are still being built.
        """

    def jobs_claim(self, queue: str, limit: int, worker_id: str, lease_seconds: float,
                   limits: dict[str, int] | None = None,
                   flow: ClaimFlow | None = None) -> list[ClaimedJob]:
        """Claim up to ``limit`` due jobs; each claim increments ``attempt``.

        ``limits`` maps task names to fleet-wide concurrency limits; ``flow`` adds rate
        buckets and per-group caps (store/flow_claim.py), spent only for jobs claimed.
        """

    def rate_buckets_prune(self, prefix: str, idle_seconds: float) -> int:
        """Delete buckets whose key starts with ``prefix`` untouched for ``idle_seconds``
        (long enough to be full again, which is what a missing bucket means)."""

    def rate_limit_push_back(self, key: str, seconds: float) -> None:
        """Empty the bucket ``key`` and hold its refill for ``seconds`` (a 429 upstream)."""

    def rate_buckets(self) -> list[tuple[str, float, datetime]]:
        """Every rate bucket: (key, tokens as last written, when)."""

    def rate_buckets_clear(self, key: str) -> bool:
        """Delete the bucket ``key`` (full again, any hold gone); False if there was none."""

    def jobs_complete_many(self, outcomes: list[Outcome]) -> set[int]:
        """Record outcomes, fenced by attempt; returns the ids whose write took effect."""

    def jobs_heartbeat(self, worker_id: str, lease_seconds: float,
                       held: list[tuple[int, int]]) -> list[tuple[int, int, bool]]:
        """Extend the leases of the ``(job id, attempt)`` pairs this worker holds, in one
        statement, and mark the worker alive.

        Only the pairs named: a job claimed by a call whose reply was lost is unknown to
        the worker, so its lease runs out and the rescuer brings it back. Returns ``(job id,
        attempt, cancel requested)`` for each pair still held.
        """

    def jobs_release_unknown(self, worker_id: str, queue: str,
                             held: list[tuple[int, int]]) -> list[int]:
        """After a claim whose reply was lost: give back, without spending an attempt, the
        jobs of ``queue`` running under ``worker_id`` that are not in ``held``."""

    def jobs_written(self, outcomes: list[Outcome]) -> set[int]:
        """Of ``outcomes``, the ids whose row already shows that outcome (same attempt, same
        state): after a completion whose reply was lost, these were written, not stale."""

    def jobs_rescue(self, limit: int = 1000) -> list[RescuedJob]:
        """Move jobs whose lease expired back to waiting (or dead if attempts are spent)."""

    def jobs_hand_back(self, worker_id: str, jobs: list[tuple[int, int]],
                       reason: HandBack = SHUTDOWN) -> int:
        """Give running jobs back at once without spending an attempt: at shutdown, or
        from a worker that does not register their task."""

    # -- jobs: people and tools -------------------------------------------------
    def jobs_get(self, job_id: int) -> Job: ...

    def jobs_list(self, state: JobState | None = None, queue: str | None = None,
                  task: str | None = None, limit: int = 50,
                  before_id: int | None = None) -> list[Job]: ...

    def jobs_retry(self, job_id: int) -> Job:
        """Make a dead, cancelled or waiting job available now."""

    def jobs_cancel(self, job_id: int) -> Job:
        """Cancel a waiting job at once, or ask the worker running it to stop."""

    def jobs_prune(self, finished_older_than: float, dead_older_than: float,
                   limit: int = 10_000) -> int:
        """Delete finished jobs past their retention; returns how many."""

    def queues_stats(self, include_finished: bool = True) -> list[QueueStats]:
        """Per queue counts and the oldest waiting job's age, from partial indexes only.

        ``include_finished`` also counts retained succeeded/cancelled jobs: a scan of
        history, for people; metrics and health pass False.
        """


    # -- visibility (store/<engine>/observe.py) -----------------------------------------
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

    # -- the operations console (store/console.py) ---------------------------------------
    def jobs_page(self, f: JobFilter, sort: str = "created", after: int | None = None,
                  limit: int = 50) -> list[Job]:
        """A page of the jobs ``f`` matches, newest first by ``sort``, after job ``after``."""

    def jobs_count_upto(self, f: JobFilter, cap: int) -> int:
        """How many jobs ``f`` matches, counted up to ``cap``."""

    def jobs_match_ids(self, f: JobFilter, after: int | None, limit: int) -> list[int]:
        """The next ``limit`` ids ``f`` matches after ``after``, in id order."""

    def jobs_retry_batch(self, ids: Sequence[int]) -> list[int]:
        """``jobs_retry`` for many ids at once; the ids moved."""

    def jobs_delete_finished(self, ids: Sequence[int]) -> list[int]:
        """Delete the finished jobs among ``ids``; the ids deleted."""

    def bulk_actions_add(self, who: str, action: str, filter_text: str, matched: int,
                         done: int) -> None: ...

    def bulk_actions_list(self, limit: int = 20) -> list[BulkAction]: ...

    def bulk_actions_prune(self, keep: int) -> None: ...

    # -- workers and leadership ---------------------------------------------------
    def workers_upsert(self, worker_id: str, host: str, pid: int,
                       queues: dict[str, int], tasks: list[str] | None = None) -> None:
        """Register or refresh a worker: its queues and the task names it registers
        (None: not said, as by a worker of an older release)."""

    def workers_delete(self, worker_id: str) -> None: ...

    def workers_list(self) -> list[WorkerInfo]: ...

    def workers_prune(self, stale_after: float) -> int: ...

    def leader_acquire(self, name: str, owner: str, ttl: float) -> int | None:
        """Take or renew the named lease; returns the term held, or None."""

    def leader_release(self, name: str, owner: str) -> None: ...

    # -- long jobs: checkpoints, progress, paused queues, effect keys -------------------
    def transaction(self) -> AbstractContextManager[Any]:
        """A native connection (psycopg / sqlite3) in a transaction on the queue's database."""

    def jobs_touch(self, job_id: int, attempt: int, lease_seconds: float, *,
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


    # -- schedules (shared logic in store/schedules.py, SQL in each engine's schedules.sql) --
    def schedules_reconcile(self, defs: list[ScheduleDef],
                            first_fire: Callable[[ScheduleDef, datetime], datetime]
                            ) -> dict[str, str]:
        """Make stored schedules match the declared ones, keeping unchanged cursors."""

    def schedules_add(self, defn: ScheduleDef,
                      first_fire: Callable[[ScheduleDef, datetime], datetime],
                      replace: bool = False) -> str:
        """Store a run-time schedule (origin 'runtime'); created | revived | replaced."""

    def schedules_remove(self, name: str) -> None:
        """Mark a run-time schedule removed; refuses code-declared ones."""

    def schedules_exist(self) -> bool:
        """Whether any schedule was ever stored."""

    def schedules_due(self) -> list[str]:
        """Names of schedules with a cursor due or buffered runs to release."""

    def schedules_due_as_of(self) -> tuple[datetime, list[str]]:
        """The database's instant and the schedules due then, earliest cursor first;
        reads only those (indexes), however many are not due."""

    def schedules_next_fire_in(self) -> float | None:
        """Seconds from the database's instant to the earliest cursor after it (None:
        none); the first entry of an index."""

    def schedules_fire(self, names: list[str],
                       planner: Callable[[ScheduleDef, Any, datetime], Plan],
                       owner: str, term: int, *,
                       insert: Callable[[list[NewJob], Any], list[EnqueueResult]]
                       ) -> list[tuple[str, Applied]]:
        """The leader's batch: many schedules decided and written in one transaction
        (a few statements in all); ones another transaction holds are skipped. Raises
        NotLeader unless ``(owner, term)`` holds."""

    def schedules_apply(self, name: str,
                        planner: Callable[[ScheduleDef, Any, datetime], Plan],
                        owner: str | None = None, term: int | None = None, *,
                        insert: Callable[[list[NewJob], Any], list[EnqueueResult]]
                        ) -> Applied:
        """One transaction: snapshot, plan, write (jobs, occurrences, cursor).

        With ``term``, raises NotLeader unless that leadership still holds. Jobs go in
        through ``insert(jobs, conn)``: the App's insert path, so a fired job is enqueued
        as every other (validation, tracing).
        """

    def schedule_runs_sync(self, owner: str, term: int
                           ) -> list[tuple[str, datetime, RunStatus, int | None]]:
        """Copy finished jobs' outcomes onto their occurrences."""

    def schedule_runs_expire(self, owner: str, term: int) -> list[tuple[str, datetime, int]]:
        """Cancel as missed the jobs not started by fire instant + starting deadline."""

    def schedule_runs_check_late(self, owner: str, term: int) -> list[LateRun]:
        """Dead-man switch: returns each newly late occurrence once."""

    def schedule_runs_check_items(self, owner: str, term: int,
                                  judge: Callable[[RunFigures, int | None, str | None],
                                                  tuple[ItemsCheck, str]]
                                  ) -> list[EmptyRun]:
        """The items check (``expect_items``): returns each newly empty occurrence once."""

    def schedule_runs_prune(self, older_than: float) -> int: ...

    def schedules_list(self, include_removed: bool = False) -> list[ScheduleInfo]: ...

    def schedules_get(self, name: str) -> ScheduleInfo: ...

    def schedule_runs_list(self, name: str, limit: int = 50) -> list[ScheduleRun]: ...

    def schedule_runs_history(self, name: str, before: datetime | None = None,
                              limit: int = 50) -> list[ScheduleRunLine]:
        """Occurrences fired before ``before``, newest first, each with its job's state."""

    def schedules_set_paused(self, name: str, paused: bool, reason: str | None = None
                             ) -> None: ...

    def schedules_resume(self, name: str,
                         resume: Callable[[ScheduleDef, datetime | None, datetime],
                                          tuple[Plan, str | None]]) -> Plan | None: ...
    # -- durable workflows ------------------------------------------------------------
    def workflow_steps_get(self, job_id: int) -> dict[str, StepRecord]: ...

    def workflow_begin(self, job_id: int, attempt: int, version: str
                       ) -> tuple[WorkflowRun, dict[str, StepRecord]] | None:
        """Create the instance row on its first run; read it and its steps. None: lease lost."""

    def workflow_run_set(self, job_id: int, attempt: int, status: str, *, cancelled: bool,
                         cause: str | None = None, last_attempt: int | None = None,
                         extend_attempts: int | None = None) -> bool:
        """Record the instance's status (fenced); ``extend_attempts`` gives the job room."""

    def workflow_run_read(self, job_id: int) -> WorkflowRun | None: ...

    def workflow_step_record(self, job_id: int, attempt: int, name: str, status: str,
                             result_json: str | None, wake_at: datetime | None, *,
                             position: int | None = None, kind: str = "step",
                             digest: str | None = None, outcome: str | None = None,
                             tries: int = 0, started_at: datetime | None = None) -> bool | None:
        """Record a step, fenced by attempt: None if this attempt no longer holds the job,
        else whether a cancel was requested."""

    def workflow_event_take(self, job_id: int, attempt: int, name: str, step: str, *,
                            position: int | None = None, digest: str | None = None,
                            started_at: datetime | None = None) -> tuple[bool, Any]:
        """Consume the oldest pending event ``name`` and record it as ``step``, atomically."""

    def workflow_events_take(self, job_id: int, attempt: int, names: list[str], *,
                             started_at: datetime | None = None) -> list[tuple[bool, Any]]:
        """:meth:`workflow_event_take` for many events in one transaction, each recorded as
        the step of its own name (a join taking its members' reports); ``(False, None)``
        for a name with no pending event. Raises LeaseLost like the single take."""

    def workflow_event_find(self, job_id: int, name: str, key: str) -> int | None:
        """The id of the event sent to this workflow under ``name`` and ``key``, if any
        (a second send with that key would deliver nothing)."""

    def workflow_event_send(self, job_id: int, name: str, payload_json: str,
                            key: str | None = None, *,
                            join: tuple[str, int] | None = None) -> int:
        """Store an event for a workflow and wake it; a repeated ``key`` stores nothing.

        With ``join=(prefix, total)`` (a member's report to a parallel join; needs ``key``)
        the workflow is woken only once at least ``total`` events under ``key`` whose names
        start with ``prefix`` are stored, counted in the same transaction as the insert,
        under a lock on the workflow's row: one wake per join instead of one per member."""

    def workflow_cancel(self, job_id: int) -> bool:
        """Flag a started workflow for cancel and wake it; False if it is not one."""

    def workflows_list(self, status: str | None = None, task: str | None = None,
                       limit: int = 50) -> list[WorkflowSummary]: ...

    def workflows_page(self, status: str | None = None, task: str | None = None,
                       before: int | None = None, limit: int = 50) -> list[WorkflowLine]:
        """Workflows with an id below ``before``, newest first, each with its current step;
        ``task``: a part of the name (any case); ``status``: a workflow status or job state."""

    def workflow_events_list(self, job_id: int, limit: int = 100) -> list[WorkflowEvent]:
        """The newest events sent to a workflow, taken or not."""

    def workflow_live(self, job_id: int) -> WorkflowLive | None:
        """The job, its workflow status and steps, in one statement (None: no such job)."""

    # -- per-job logs (what a job logged while it ran; deleted with the job) ------------
    def job_logs_add(self, job_id: int, lines: list[JobLogLine]) -> None:
        """Keep these records of ``job_id`` (nothing if the job is gone; a line kept
        already, by its attempt and seq, is kept once)."""

    def job_logs_list(self, job_id: int, attempt: int = 0, after: tuple[int, int] = (0, 0),
                      limit: int = 1000) -> list[JobLogLine]:
        """The job's records after ``(attempt, seq)`` in order; ``attempt`` 0: all."""

    # -- composition: dependencies, groups, results (store/deps.py) ---------------------
    def jobs_insert_graph(self, jobs: list[NewJob], conn: Any = None, *,
                          group: bool = False, callback_of: int | None = None,
                          with_callback: bool = False
                          ) -> tuple[list[EnqueueResult], int | None]:
        """Insert jobs and their dependencies (``NewJob.after`` / ``after_new``) in one
        transaction; with ``group``, also a group of them (its id is returned), whose
        callback is the last job with ``with_callback``; ``callback_of``: the last job
        becomes that existing group's callback."""

    def deps_resolve(self, parent_ids: list[int]) -> None:
        """Count down the dependents of these finished jobs (each edge once)."""

    def deps_sweep(self, limit: int = 1000) -> int:
        """Resolve edges left open although their parent finished; how many parents."""

    def jobs_watch(self, ids: list[int]) -> tuple[list[FinishedJob], list[int]]:
        """Mark jobs as waited on; those already finished, and ids naming no job."""

    def jobs_finished(self, ids: list[int]) -> list[FinishedJob]: ...

    def jobs_dependencies(self, job_id: int) -> tuple[list[DepLink], list[DepLink]]:
        """The jobs ``job_id`` runs after, and the jobs that run after it."""

    def jobs_input(self, job_id: int) -> Any:
        """A chain link's input: the result of the job it runs after."""

    def groups_get(self, group_id: int) -> GroupInfo: ...

    def groups_members(self, group_id: int) -> list[int]: ...

    def groups_prune(self, older_than: float, limit: int = 10_000) -> int:
        """Delete groups older than ``older_than`` seconds whose jobs were all pruned."""

    def groups_of_job(self, job_id: int) -> tuple[list[int], int | None]: ...

    def groups_results(self, group_id: int) -> list[FinishedJob | None]: ...

    # -- test support ----------------------------------------------------------------
    def debug_install_transition_guard(self) -> None:
        """Install a trigger that rejects any state change not in TRANSITIONS."""
