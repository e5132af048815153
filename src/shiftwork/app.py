"""The App: tasks, settings and the engine they run on."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from datetime import date, datetime, timedelta
from typing import Any, Concatenate, ParamSpec, TypeVar, overload

from shiftwork.composition import settling
from shiftwork.composition.compose import Chain, Group, make_chain, make_graph, make_group
from shiftwork.core.backoff import DEFAULT_BACKOFF, Backoff
from shiftwork.core.bounds import MAX_LIST, whole
from shiftwork.core.callsite import declared_at
from shiftwork.core.clock import Clock, SystemClock
from shiftwork.core.crypt import Keys
from shiftwork.core.errors import (
    ConfigurationError,
    ShiftworkError,
)
from shiftwork.core.events import EventBus
from shiftwork.core.memory import parse_memory_limit
from shiftwork.core.names import check_queue, check_task_name
from shiftwork.core.settings import Settings
from shiftwork.core.states import JobState
from shiftwork.decorators import BatchTaskDecorator, TaskDecorator, WorkflowDecorator
from shiftwork.jobs.batching import Batch
from shiftwork.jobs.bulk import BulkResult, bulk_apply
from shiftwork.jobs.context import JobContext
from shiftwork.jobs.enqueue import Enqueuer, enqueue_requests, enqueue_requests_async
from shiftwork.jobs.handle import JobHandle
from shiftwork.jobs.hold import hold as hold_job
from shiftwork.jobs.hold import release as release_job
from shiftwork.jobs.hold import run_now as run_job_now
from shiftwork.jobs.hold import update as edit_job
from shiftwork.jobs.known_queues import known_queues, unknown_queue_warning
from shiftwork.jobs.reencrypt import Rotation, reencrypt
from shiftwork.jobs.sealing import open_job
from shiftwork.jobs.task import EnqueueOptions, JobRequest, Task, TaskOptions
from shiftwork.jobs.waiting import wait_result, wait_result_async
from shiftwork.model.filter import check_sort, filter_of
from shiftwork.model.items import ItemsExpectation, task_items_expectation
from shiftwork.model.limits import (
    GroupBy,
    LimitStatus,
    RateLimit,
    group_weights,
    tokens_now,
)
from shiftwork.model.limits import rate_limit as flow_rate_limit
from shiftwork.model.records import EmptyRun, EnqueueResult, HistoryBucket, Job, LateRun, QueueStats
from shiftwork.model.tags import check_tags
from shiftwork.registry import LeaderDuty, Observers, QueueOptions
from shiftwork.runtime import Runtime
from shiftwork.schedules.book import ScheduleBook
from shiftwork.schedules.definition import (
    DEFAULT_CATCHUP_CAP,
    CatchupPolicy,
    Duration,
    OverlapPolicy,
    ScheduleDef,
    declare_schedule,
)
from shiftwork.schedules.interval import expression as schedule_expression
from shiftwork.store import Store
from shiftwork.store.connections import Connections
from shiftwork.workflow import Workflow
from shiftwork.workflow.book import WorkflowBook
from shiftwork.workflow.children import InternalTask, call_task, cancel_job, cancel_jobs
from shiftwork.workflow.events import send_event
from shiftwork.workflow.runner import workflow_task

F = TypeVar("F", bound=Callable[..., Any])
P = ParamSpec("P")
R = TypeVar("R")
log_flow = logging.getLogger("shiftwork.flow")


class App:
    """Background work on one database.

    >>> app = App("sqlite:///jobs.db")
    >>> @app.task(queue="emails", max_attempts=5)
    ... def send(to: str) -> None: ...
    >>> send.enqueue("a@example.com")

    ``testing="inline"`` (for tests): every enqueue runs its jobs at once, in the caller's
    thread, as a worker would (see :func:`shiftwork.testing.inline`).

    ``encryption=Keys(...)``: the keys that seal the payloads of encrypted tasks
    (``@app.task(encrypt=True)``, or every task with ``encrypt_all=True``) and open them
    in reads; without keys, sealed values read as ``"encrypted"`` (docs/security.md).
    """

    def __init__(self, dsn: str, *, schema: str = "shiftwork", clock: Clock | None = None,
                 max_payload_bytes: int | None = None,
                 settings: Settings | None = None, auto_migrate: bool = False,
                 pool_size: int = 10, async_pool_size: int = 4,
                 testing: str | None = None, pgbouncer: bool = False,
                 listen_dsn: str | None = None, encryption: Keys | None = None,
                 encrypt_all: bool = False) -> None:
        if testing not in (None, "inline"):
            raise ConfigurationError(
                f"App(testing={testing!r}): the only test mode is 'inline' (every job runs "
                "at enqueue, in the caller's thread); leave it out for normal use")
        if encryption is not None and not isinstance(encryption, Keys):
            raise ConfigurationError("App(encryption=...) takes a shiftwork.Keys ring, e.g. "
                                     "Keys({'k1': key_bytes}) or Keys.from_env(), not "
                                     f"{type(encryption).__name__}")
        if not isinstance(encrypt_all, bool):
            raise ConfigurationError(f"App(encrypt_all=...) must be True or False, not "
                                     f"{encrypt_all!r}")
        if encrypt_all and encryption is None:
            raise ConfigurationError("App(encrypt_all=True) needs the keys to encrypt with: "
                                     "App(..., encryption=Keys(...))")
        #: Tasks declared without ``encrypt=`` are encrypted when this is True.
        self.encrypt_all = encrypt_all
        self.dsn = dsn
        self.schema = schema
        settings = settings or Settings()
        if max_payload_bytes is not None:  # the older spelling of Settings.max_args_bytes
            settings = replace(settings, max_args_bytes=max_payload_bytes)
        self.pool_size = pool_size  # the sync pool (workers, enqueue, the dashboard)
        self.async_pool_size = async_pool_size  # Postgres: enqueue_async's own pool
        #: What the workers, the scheduler and the other services run on: the store,
        #: settings, clock, events and the registry of what this App declares. The store
        #: opens now, so a DSN typo fails at start-up, not at the first enqueue.
        #: ``auto_migrate=False`` (the default): its first use checks that the schema is
        #: migrated and raises NotMigratedError if not; True: it applies pending migrations.
        #: PostgreSQL: the pool's bounds (pool_size, Settings.pool_*), and PgBouncer
        #: (transaction mode) in front of ``dsn``, with wake-ups LISTENed on ``listen_dsn``.
        self.runtime = Runtime(
            dsn, schema=schema, clock=clock or SystemClock(), settings=settings,
            auto_migrate=auto_migrate, async_pool_size=async_pool_size, keys=encryption,
            connections=Connections(
                pool_size=pool_size, pool_min_size=settings.pool_min_size,
                pool_max_idle=settings.pool_max_idle, pgbouncer=pgbouncer,
                listen_dsn=listen_dsn))
        self._enqueuer = Enqueuer(self.runtime)  # what the App's tasks enqueue on
        registry = self.runtime.registry
        self._schedules = registry.schedules = ScheduleBook(self.runtime)
        registry.observers.schedules = self._schedules  # metrics, health, dashboard
        registry.observers.health_checks.append(self._schedules.paused_on_failure)
        # Handles talk to workflows (query, update) through the waiter they already hold.
        self._workflows = self.runtime.results.talk = WorkflowBook(self.runtime)
        # The leader closes dependency edges a crash left open (store/deps.py).
        registry.leader_duties.append(LeaderDuty("dependency-sweep", self._sweep_dependencies))
        #: With ``testing="inline"``: every attempt the inline mode ran (a DrainResult).
        self.inline_results: Any = None
        if testing == "inline":
            # Imported here: the testing tools sit above the App.
            from shiftwork.testing.drain import DrainResult
            from shiftwork.testing.inline import install
            self.inline_results = DrainResult()
            install(self.runtime, self.inline_results)

    def _sweep_dependencies(self, term: int) -> None:
        settling.sweep(self.runtime.store.deps)

    # -- what the App is made of ---------------------------------------------------------

    @property
    def store(self) -> Store:
        """The storage engine. Its first use migrates when ``auto_migrate``, else checks
        that the schema is migrated (``NotMigratedError`` if not)."""
        return self.runtime.store

    @property
    def settings(self) -> Settings:
        """The tunables (``Settings``) every service of this App reads."""
        return self.runtime.settings

    @settings.setter
    def settings(self, settings: Settings) -> None:
        self.runtime.settings = settings

    @property
    def clock(self) -> Clock:
        """The clock every service of this App reads time from."""
        return self.runtime.clock

    @property
    def events(self) -> EventBus:
        """Events this App's services publish (``schedule.paused``...)."""
        return self.runtime.events

    @property
    def tasks(self) -> dict[str, Task[Any, Any]]:
        """The registered tasks, by name."""
        return self.runtime.registry.tasks

    @property
    def queue_options(self) -> dict[str, QueueOptions]:
        """The queues declared with :meth:`queue`, by name."""
        return self.runtime.registry.queue_options

    @property
    def schedules(self) -> ScheduleBook:
        """Schedules declared in code (reconciled into the database when a worker starts),
        and the actions people take on schedules: ``app.schedules.pause(name)``..."""
        return self._schedules

    @property
    def workflows(self) -> WorkflowBook:
        """Workflow instances by id: their published state (``app.workflows.state(id)``),
        updates (``app.workflows.update(id, name, payload)``), streams
        (``app.workflows.read_stream(id, key)``) and forks (``app.workflows.fork(id,
        from_step=...)``); docs/workflows.md."""
        return self._workflows

    @property
    def observers(self) -> Observers:
        """Visibility hooks (health checks, metric collectors, the schedules view): see
        shiftwork.observe and docs/observability.md."""
        return self.runtime.registry.observers

    @property
    def import_path(self) -> str | None:
        """``"module:attr"`` of this App, set by the command line (worker processes
        import it)."""
        return self.runtime.import_path

    @import_path.setter
    def import_path(self, path: str | None) -> None:
        self.runtime.import_path = path

    # -- storage -----------------------------------------------------------------

    def migrate(self) -> list[int]:
        """Create or upgrade the tables; returns the migration numbers applied (logged
        at INFO). Safe to call from many processes at once."""
        return self.runtime.migrate()

    def describe_database(self) -> str:
        """``sqlite /abs/jobs.db`` or ``postgresql host:5432/db schema jobs``."""
        return self.runtime.describe_database()

    def close(self) -> None:
        """Close the database connections (the async pool: :meth:`aclose`)."""
        self.runtime.close()

    async def aclose(self) -> None:
        """Close the async pool ``enqueue_async`` opened, then the sync connections
        (the ASGI lifespan helper calls this at shutdown)."""
        await self.runtime.aclose()

    def connection_budget(self) -> int | None:
        """The most Postgres connections this App holds at once: its pool (``pool_size``)
        plus the async pool of ``enqueue_async`` (``async_pool_size``). A worker adds one
        LISTEN connection. None on SQLite (one connection per thread, no pool)."""
        return self.runtime.connection_budget()

    # -- tasks ------------------------------------------------------------------------

    # The overloads keep the function's signature (less the context it receives first),
    # so a wrong argument to enqueue is a type error. The keyword list of the last one is
    # the implementation's, in the same order.
    @overload
    def task(self, fn: Callable[Concatenate[JobContext, P], R]) -> Task[P, R]: ...

    @overload
    def task(self, fn: Callable[P, R]) -> Task[P, R]: ...

    @overload
    def task(self, fn: None = None, *, name: str | None = None, queue: str = "default",
             priority: int = 0, max_attempts: int = 20, retry: Backoff = DEFAULT_BACKOFF,
             timeout: float | None = None, unique: bool | tuple[str, ...] | list[str] = False,
             concurrency: int | None = None, rate_limit: RateLimit | str | None = None,
             group_by: GroupBy | None = None, group_concurrency: int | None = None,
             group_rate_limit: RateLimit | str | None = None, store_result: bool = True,
             memory_limit: int | str | None = None,
             expect_items: int | None = None, expect_items_within: Duration = 3600.0,
             tags: list[str] | tuple[str, ...] = (), unique_for: Duration | None = None,
             debounce: Duration | None = None,
             unique_states: list[str] | tuple[str, ...] | None = None, batch: None = None,
             encrypt: bool | None = None
             ) -> TaskDecorator: ...

    @overload
    def task(self, fn: None = None, *, name: str | None = None, queue: str = "default",
             priority: int = 0, max_attempts: int = 20, retry: Backoff = DEFAULT_BACKOFF,
             timeout: None = None, unique: bool | tuple[str, ...] | list[str] = False,
             concurrency: int | None = None, rate_limit: RateLimit | str | None = None,
             group_by: GroupBy | None = None, group_concurrency: int | None = None,
             group_rate_limit: RateLimit | str | None = None, store_result: bool = True,
             memory_limit: None = None,
             expect_items: int | None = None, expect_items_within: Duration = 3600.0,
             tags: list[str] | tuple[str, ...] = (), batch: Batch
             ) -> BatchTaskDecorator: ...

    def task(self, fn: Any = None, *, name: str | None = None, queue: str = "default",
             priority: int = 0, max_attempts: int = 20, retry: Backoff = DEFAULT_BACKOFF,
             timeout: float | None = None, unique: bool | tuple[str, ...] | list[str] = False,
             concurrency: int | None = None, rate_limit: RateLimit | str | None = None,
             group_by: GroupBy | None = None, group_concurrency: int | None = None,
             group_rate_limit: RateLimit | str | None = None, store_result: bool = True,
             memory_limit: int | str | None = None,
             expect_items: int | None = None, expect_items_within: Duration = 3600.0,
             tags: list[str] | tuple[str, ...] = (), unique_for: Duration | None = None,
             debounce: Duration | None = None,
             unique_states: list[str] | tuple[str, ...] | None = None,
             batch: Batch | None = None,
             encrypt: bool | None = None
             ) -> Any:
        """Register a function as a task. Usable bare (``@app.task``) or with options.

        A first parameter named ``ctx`` (or annotated :class:`JobContext`) receives the
        job's context; the task's arguments are the others, checked at enqueue.

        Flow control (docs/flow-control.md): ``rate_limit`` ("100/s", "10/m", "5/h" or a
        :class:`~shiftwork.model.limits.RateLimit`) caps starts fleet-wide; ``group_by`` names the
        argument (or a callable of the arguments) whose value is a job's group, and
        ``group_concurrency`` caps each group's running jobs fleet-wide, and
        ``group_rate_limit`` gives each group its own rate limit.

        ``store_result=False``: the return value is not kept (``job.result()`` is None).

        ``memory_limit`` ("512MB", "2GB" or bytes): each attempt runs in a child process
        whose memory is limited and watched; one that passes it fails with
        :class:`~shiftwork.core.errors.MemoryLimitExceeded` (docs/long-jobs.md).
        ``expect_items``: while the task's jobs succeed, together they must report at least
        this many items (``ctx.processed``) per ``expect_items_within`` (seconds or a
        timedelta, 60 s to a day; an hour by default), or ``shiftwork health`` and
        ``shiftwork_task_empty`` say the task runs empty (docs/alerting.md).
        ``unique_for`` (seconds): the key stays taken that long after each enqueue, whatever
        its job's state; ``unique_states``: the states of its job that hold the key;
        ``debounce`` (seconds): an enqueue while the key's job waits replaces its arguments
        and moves it to now + debounce (docs/concepts.md, "Unique jobs").
        ``tags``: labels every job of the task carries (``["billing"]``), shown and
        filterable in the dashboard and ``shiftwork jobs list --tag``; ``using(tags=...)``
        adds more per job.

        ``batch`` (a :class:`~shiftwork.Batch`): the function is called once per batch of
        jobs with a list of :class:`~shiftwork.BatchItem` and returns one result per item
        (an exception instance fails that item alone), or None (docs/batching.md).
        ``encrypt=True``: the task's arguments, result, checkpoints, progress messages and
        error messages are stored sealed with the App's keys, and its unique keys as a
        keyed digest (docs/security.md); None (the default) follows ``App(encrypt_all=)``.
        """
        if encrypt is not None and not isinstance(encrypt, bool):
            raise ConfigurationError(f"task {name or getattr(fn, '__name__', fn)}: encrypt "
                                     f"must be True or False, not {encrypt!r}")
        if encrypt is None:
            encrypt = self.encrypt_all
        elif encrypt and self.runtime.keys is None:
            raise ConfigurationError(f"task {name or getattr(fn, '__name__', fn)}: "
                                     "encrypt=True needs the keys to encrypt with: "
                                     "App(..., encryption=Keys(...))")
        items, within = task_items_expectation(expect_items, expect_items_within,
                                               f"task {name or getattr(fn, '__name__', fn)}")
        for option, value in (("group_concurrency", group_concurrency),
                              ("group_rate_limit", group_rate_limit)):
            if value is not None and group_by is None:
                raise ConfigurationError(f"{option} needs group_by (the argument that names "
                                         "a job's group), e.g. group_by=\"account_id\"")
        options = TaskOptions(queue=queue, priority=priority, max_attempts=max_attempts,
                              retry=retry, timeout=timeout,
                              unique=tuple(unique) if isinstance(unique, list) else unique,
                              concurrency=concurrency,
                              rate_limit=flow_rate_limit(rate_limit, f"task {name or fn}"),
                              group_by=group_by, group_concurrency=group_concurrency,
                              group_rate_limit=flow_rate_limit(group_rate_limit,
                                                               f"task {name or fn}: group"),
                              store_result=store_result, expect_items=items,
                              expect_items_within=within,
                              tags=check_tags(tags, f"task {name or fn}: tags"),
                              unique_for=unique_for, debounce=debounce,
                              unique_states=tuple(unique_states)
                              if isinstance(unique_states, list) else unique_states,
                              batch=_batch_option(batch, f"task {name or fn}"),
                              encrypt=bool(encrypt))

        def register(f: F) -> Task[Any, Any]:
            task_name = name or f"{f.__module__}.{f.__qualname__}"
            if task_name in self.tasks:
                raise ConfigurationError(f"task {task_name!r} is registered twice")
            limit = parse_memory_limit(memory_limit, f"task {task_name}")
            t: Task[Any, Any] = Task(self._enqueuer, f, task_name,
                                     replace(options, memory_limit=limit) if limit else options)
            self.tasks[task_name] = t
            return t

        return register(fn) if fn is not None else register

    @overload
    def workflow(self, fn: Callable[Concatenate[Workflow, P], R]) -> Task[P, R]: ...

    @overload
    def workflow(self, fn: None = None, *, version: str | None = None,
                 **options: Any) -> WorkflowDecorator: ...

    def workflow(self, fn: Any = None, *, version: str | None = None, **options: Any) -> Any:
        """Register a durable workflow: ``def body(wf: Workflow, ...)``; options as for tasks,
        plus ``version`` (recorded per instance; default: a digest of the body's source)."""
        if options.get("batch") is not None:
            raise ConfigurationError("a workflow cannot be a batch task (batch=): each "
                                     "workflow replays its own history in its own run")

        def register(run: Callable[..., Any], **fixed: Any) -> Task[Any, Any]:
            self._declare_internal(call_task)  # the task that runs wf.call branches
            return self.task(run, **{**options, **fixed})

        retry = options.get("retry")
        if fn is not None:
            return workflow_task(register, fn, version=version, retry=retry)
        return lambda f: workflow_task(register, f, version=version, retry=retry)

    def _declare_internal(self, make: Callable[[Runtime], InternalTask]) -> None:
        """Declare one of shiftwork's own tasks (once per App): a task like any other,
        never listed for people and never enqueued by them (Task.internal)."""
        spec = make(self.runtime)
        if spec.name not in self.tasks:
            self.task(name=spec.name, retry=spec.retry)(spec.fn).internal = True

    def send_event(self, workflow_id: int, name: str, payload: Any = None, *,
                   key: str | None = None) -> int:
        """Deliver an event to a workflow (kept until a ``wait_for_event`` takes it).

        With ``key``, an event already sent under that key (for this workflow and name)
        is not stored again: a webhook delivered twice wakes one wait, not two.
        """
        return send_event(self.runtime, workflow_id, name, payload, key=key)

    def workflow_history(self, workflow_id: int) -> list[Any]:
        """The recorded steps of a workflow, in the order they were first recorded."""
        steps = self.store.workflows.steps_get(workflow_id)
        return list(steps.values())

    def get_workflow(self, workflow_id: int) -> Any:
        """The workflow's status (running, compensating, succeeded, failed, compensated,
        cancelled), code version and cause; None before its first run."""
        return self.store.workflows.run_read(workflow_id)

    def get_task(self, name: str) -> Task[Any, Any]:
        """The task registered as ``name``; the error names the closest ones."""
        return self.runtime.registry.get_task(name)

    def task_names(self) -> list[str]:
        """The registered tasks people may enqueue and schedule, sorted (shiftwork's
        internal ones left out)."""
        return self.runtime.registry.task_names()

    def queue(self, name: str, *, max_wait: float | None = None,
              rate_limit: RateLimit | str | None = None, fair: bool = False,
              weights: dict[str, int] | None = None) -> QueueOptions:
        """Declare what a queue promises: ``app.queue("emails", max_wait=60)``.

        ``max_wait``: seconds the oldest waiting (due) job may wait; past it,
        ``shiftwork health`` fails and the dashboard marks the queue. ``rate_limit``: at
        most N job starts per period from this queue, across every worker ("500/s").
        ``fair=True``: claims go round-robin across the groups with waiting jobs (a job's
        group: its task's ``group_by`` or ``.using(group=)``), so one group's flood does not
        starve the others; ``weights={"acme": 3}`` gives a group 3 jobs per turn.
        """
        check_queue(name)
        if max_wait is not None and (not isinstance(max_wait, (int, float)) or max_wait <= 0):
            raise ConfigurationError(f"queue {name}: max_wait must be a number of seconds > 0, "
                                     f"got {max_wait!r}")
        if not isinstance(fair, bool):
            raise ConfigurationError(f"queue {name}: fair must be True or False, got {fair!r}")
        if weights and not fair:
            raise ConfigurationError(f"queue {name}: weights need fair=True")
        options = QueueOptions(name, float(max_wait) if max_wait is not None else None,
                               flow_rate_limit(rate_limit, f"queue {name}"), fair,
                               group_weights(weights, f"queue {name}"))
        self.runtime.registry.queue_options[name] = options
        return options

    def rate_limits(self) -> list[LimitStatus]:
        """Every declared rate limit with its bucket's tokens now (for people and metrics)."""
        declared: dict[str, RateLimit] = {
            f"queue:{q.name}": q.rate_limit
            for q in self.runtime.registry.queue_options.values() if q.rate_limit}
        for t in self.tasks.values():
            if t.options.rate_limit:
                declared[f"task:{t.name}"] = t.options.rate_limit
        buckets = {key: (tokens, at) for key, tokens, at in self.store.jobs.rate_buckets()}
        now = self.store.db_now().timestamp()
        out = []
        for key, limit in sorted(declared.items()):
            seen = buckets.get(key)
            out.append(LimitStatus(key, limit, None if seen is None else
                                   tokens_now(seen[0], seen[1].timestamp(), now, limit)))
        for t in self.tasks.values():
            if t.options.group_rate_limit:
                out.append(LimitStatus(f"group:{t.name}:*", t.options.group_rate_limit, None))
        return out

    def clear_backoff(self, limit: str) -> bool:
        """End a rate limit's hold now: ``"task:<name>"`` or ``"queue:<name>"``, as
        :meth:`rate_limits` and ``shiftwork queues`` name it. The bucket starts full again
        (a hold set by ``ctx.rate_limited`` is gone); False if it held nothing."""
        kind, _, name = limit.partition(":") if isinstance(limit, str) else ("", "", "")
        if kind == "task":
            check_task_name(name)
        elif kind == "queue":
            check_queue(name)
        else:
            raise ConfigurationError(f"clear_backoff: give 'task:<name>' or 'queue:<name>' "
                                     f"(as shiftwork queues lists them), not {limit!r}")
        cleared = self.store.jobs.rate_buckets_clear(limit)
        log_flow.info("%s: rate limit hold cleared by hand", limit)
        return cleared

    # -- schedules -----------------------------------------------------------------------

    def schedule(self, name: str, cron: str | None = None,
                 task: Task[Any, Any] | str | None = None,
                 args: tuple[Any, ...] | list[Any] = (), kwargs: dict[str, Any] | None = None,
                 *, every: str | timedelta | None = None, anchor: datetime | None = None,
                 exclude: Iterable[date | str] | date | str | None = None,
                 tz: str = "UTC", catchup: CatchupPolicy = "latest",
                 catchup_window: Duration | None = None,
                 catchup_cap: int = DEFAULT_CATCHUP_CAP, overlap: OverlapPolicy = "skip",
                 starting_deadline: Duration | None = None, jitter: Duration | None = None,
                 expect_success_within: Duration | None = None,
                 pause_on_failure: bool = False, queue: str | None = None,
                 priority: int | None = None,
                 expect_items: ItemsExpectation | None = None) -> ScheduleDef:
        """Declare a schedule that enqueues ``task(*args, **kwargs)`` at each fire.

        When: a ``cron`` string, or ``every="90m"`` (a ``timedelta`` too), elapsed time from
        ``anchor`` (default 2000-01-01T00:00:00Z, so every host and deploy agrees);
        ``exclude`` names dates (on ``tz``'s calendar) on which nothing fires.

        ``policy``: ``tz``, ``catchup``, ``catchup_window``, ``catchup_cap``, ``overlap``,
        ``starting_deadline``, ``jitter``, ``expect_success_within``, ``pause_on_failure``,
        ``queue``, ``priority`` (see docs/scheduling-policies.md). The cron expression, the
        zone and the arguments are checked now.

        ``expect_items``: each succeeded run must report at least this many items
        (``ctx.processed``), or a callable given the run's figures
        (``shiftwork.model.records.RunFigures``) returns whether it is fine; a run that falls
        short is marked empty once and alerted
        (``on_schedule_empty``, ``shiftwork health``; docs/alerting.md).
        """
        try:
            if task is None:
                raise ConfigurationError(f"schedule {name}: give the task it enqueues")
            t = task if isinstance(task, Task) else self.get_task(task)
            if name in self.schedules:
                raise ConfigurationError(f"schedule {name!r} is declared twice")
            when = schedule_expression(cron, every=every, anchor=anchor, exclude=exclude)
            job = t.build(tuple(args), dict(kwargs or {}),  # occurrences sealed at insert
                          EnqueueOptions(queue=queue, priority=priority), None, seal=False)
            defn = declare_schedule(
                name, when, t.name, job, tz=tz, catchup=catchup,
                catchup_window=catchup_window, catchup_cap=catchup_cap, overlap=overlap,
                starting_deadline=starting_deadline, jitter=jitter,
                expect_success_within=expect_success_within, pause_on_failure=pause_on_failure,
                expect_items=expect_items)
        except ShiftworkError as exc:
            # The traceback ends in the library: the message says where the user wrote it.
            raise declared_at(exc) from None
        self.schedules[name] = defn
        return defn

    def periodic(self, cron: str, *, name: str | None = None, tz: str = "UTC",
                 args: tuple[Any, ...] | list[Any] = (), kwargs: dict[str, Any] | None = None,
                 catchup: CatchupPolicy = "latest", catchup_window: Duration | None = None,
                 catchup_cap: int = DEFAULT_CATCHUP_CAP, overlap: OverlapPolicy = "skip",
                 starting_deadline: Duration | None = None, jitter: Duration | None = None,
                 expect_success_within: Duration | None = None,
                 pause_on_failure: bool = False,
                 expect_items: ItemsExpectation | None = None,
                 **task_options: Any) -> TaskDecorator:
        """Register a function as a task and schedule it: ``@app.periodic("0 2 * * *",
        tz="Europe/Berlin")``. ``task_options`` are :meth:`task`'s (queue, timeout...)."""

        def register(fn: Callable[..., Any]) -> Task[Any, Any]:
            t: Task[Any, Any] = self.task(name=name, **task_options)(fn)
            try:
                self.schedule(name or t.name, cron, t, args, kwargs, tz=tz, catchup=catchup,
                              catchup_window=catchup_window, catchup_cap=catchup_cap,
                              overlap=overlap, starting_deadline=starting_deadline,
                              jitter=jitter, expect_success_within=expect_success_within,
                              pause_on_failure=pause_on_failure,
                              expect_items=expect_items)
            except ShiftworkError as exc:
                self.tasks.pop(t.name, None)  # no task left behind by a refused schedule
                raise declared_at(exc) from None
            return t

        return register

    def on_schedule_late(self, fn: Callable[[LateRun], None]) -> Callable[[LateRun], None]:
        """Register an alert hook, called by the leader once per late occurrence."""
        self.runtime.registry.schedule_late_hooks.append(fn)
        return fn

    def on_schedule_empty(self, fn: Callable[[EmptyRun], None]) -> Callable[[EmptyRun], None]:
        """Register an alert hook, called by the leader once per occurrence whose run
        succeeded with fewer items than the schedule expects (``expect_items=``)."""
        self.runtime.registry.schedule_empty_hooks.append(fn)
        return fn

    # -- enqueue ----------------------------------------------------------------------

    def enqueue(self, task: str, *args: Any, **kwargs: Any) -> EnqueueResult:
        """Enqueue a task by name (e.g. from another service or the command line)."""
        return self.get_task(task).call(*args, **kwargs).enqueue()

    def enqueue_many(self, requests: Iterable[JobRequest], conn: Any = None
                     ) -> list[EnqueueResult]:
        """Validate every request first, then insert in one round trip per batch.

        With ``conn`` (a psycopg or sqlite3 connection) the jobs join that
        connection's transaction: they exist if and only if it commits.
        """
        return enqueue_requests(self.runtime, requests, conn)

    async def enqueue_many_async(self, requests: Iterable[JobRequest], conn: Any = None
                                 ) -> list[EnqueueResult]:
        """:meth:`enqueue_many` for asyncio code: validated the same way, inserted on the
        async connection pool (Postgres; SQLite: in a thread). With ``conn`` (a
        ``psycopg.AsyncConnection``) the jobs join that connection's transaction."""
        return await enqueue_requests_async(self.runtime, requests, conn)

    # -- composition (docs/composition.md) ------------------------------------------------

    def group(self, requests: Iterable[JobRequest], *, then: JobRequest | None = None,
              on_failure: str = "run", conn: Any = None) -> Group:
        """Enqueue jobs as a group, in one transaction: ``app.group(resize.call(i) for i
        in ids)``. Then ``g.then(publish.call(album))`` runs a callback once all finished,
        ``g.progress()`` counts them. ``then=`` enqueues the callback in the same
        transaction (``g.callback`` is its handle)."""
        return make_group(self.runtime, requests, conn, then, on_failure)

    def chain(self, *requests: JobRequest, conn: Any = None) -> Chain[Any]:
        """Enqueue jobs that run one after another, each given the previous one's result
        as its last argument; a link that dies or is cancelled cancels the rest."""
        return make_chain(self.runtime, requests, conn)

    def enqueue_graph(self, nodes: Mapping[str, JobRequest],
                      after: Mapping[str, Iterable[str]], *, conn: Any = None
                      ) -> dict[str, JobHandle[Any]]:
        """Enqueue named jobs and their dependencies (``after={"b": ["a"]}``: b runs
        after a) in one transaction. A cycle or an unknown name raises, nothing written."""
        return make_graph(self.runtime, nodes, after, conn)

    def job(self, job_id: int) -> JobHandle[Any]:
        """A handle on an existing job, to wait for its result."""
        return JobHandle(job_id, False, self.runtime.results)

    def get_group(self, group_id: int) -> Group:
        """A group enqueued earlier (``g.id``), to add its callback or read its progress."""
        members = self.store.deps.group_members(group_id)
        if not members:
            self.store.deps.group_get(group_id)  # raises JobNotFoundError naming the group
        return Group(self.runtime, group_id, [EnqueueResult(m, False) for m in members])

    def wait_result(self, job_id: int, timeout: float | None = 30.0) -> Any:
        """Block until job ``job_id`` finished; its result (see JobHandle.result)."""
        return wait_result(self.runtime.results, job_id, timeout)

    async def wait_result_async(self, job_id: int, timeout: float | None = 30.0) -> Any:
        """:meth:`wait_result` for asyncio code."""
        return await wait_result_async(self.runtime.results, job_id, timeout)

    # -- people and tools --------------------------------------------------------------

    def get_job(self, job_id: int) -> Job:
        """One job, with its arguments, result and error history (sealed values opened
        with the App's keys, else ``"encrypted"``)."""
        return open_job(self.runtime.keys, self.store.jobs.get(job_id))

    def list_jobs(self, state: JobState | str | None = None, queue: str | None = None,
                  task: str | None = None, limit: int = 50) -> list[Job]:
        """Jobs, newest first, filtered by state, queue and task."""
        st = JobState(state) if isinstance(state, str) else state
        whole(limit, "list_jobs: limit", 0, MAX_LIST)
        return [open_job(self.runtime.keys, j)
                for j in self.store.jobs.list(state=st, queue=queue, task=task, limit=limit)]

    def reencrypt(self, *, batch: int = 500, seal_clear: bool = True,
                  on_batch: Callable[[Rotation], None] | None = None) -> Rotation:
        """After a key rotation, reseal every stored payload with the current key of
        ``App(encryption=)``, ``batch`` jobs per transaction (``shiftwork jobs
        reencrypt``); ``seal_clear`` also seals what encrypted tasks stored before they
        were. Safe beside running workers (docs/security.md)."""
        return reencrypt(self.runtime, batch=batch, seal_clear=seal_clear, on_batch=on_batch)

    def find_jobs(self, *, sort: str = "created", after: int | None = None, limit: int = 50,
                  **filters: Any) -> list[Job]:
        """Jobs a filter matches (job_filter.py: ``state``, ``queue``, ``task`` (a part),
        ``tag``, ``error`` (a part of the last one), ``created_from``/``created_to``,
        ``finished_from``/``finished_to``, ``unique_key``, ``id``), newest first by
        ``sort`` (created, run_at, finished); ``after``: the last job of the page before."""
        whole(limit, "find_jobs: limit", 0, MAX_LIST)
        return [open_job(self.runtime.keys, j) for j in
                self.store.console.page(filter_of(filters), check_sort(sort), after, limit)]

    def bulk(self, action: str, *, who: str = "python", **filters: Any) -> BulkResult:
        """``action`` (retry, cancel or delete) on every job the filter matches (the
        filters of :meth:`find_jobs`), in batches, audited as ``who``."""
        return bulk_apply(self, action, filter_of(filters), who)

    def retry_job(self, job_id: int) -> Job:
        """Run a dead or cancelled job again now."""
        return self.store.jobs.retry(job_id)

    def cancel_job(self, job_id: int) -> Job:
        """Cancel a waiting job, or ask a running one to stop (seen at its next check)."""
        return cancel_job(self.runtime, job_id)

    def cancel_jobs(self, job_ids: list[int]) -> int:
        """:meth:`cancel_job` for many ids in one transaction (a bulk cancel's batch); how
        many were cancelled or asked to stop (ids gone or finished are skipped)."""
        return cancel_jobs(self.runtime, job_ids)

    def hold(self, job_id: int, *, who: str = "python") -> Job:
        """Hold a job (or a workflow): a waiting one is never claimed until released; a
        running one finishes its attempt, and is held if it would run again. Audited as
        ``who``; a finished job raises ``JobStateError``."""
        return hold_job(self, job_id, who)

    def release(self, job_id: int, *, who: str = "python") -> Job:
        """Release a held job: scheduled while its ``run_at`` is ahead, else due now."""
        return release_job(self, job_id, who)

    def run_now(self, job_id: int, *, who: str = "python") -> Job:
        """Make a scheduled, retrying or held job due now."""
        return run_job_now(self, job_id, who)

    def update_job(self, job_id: int, *, run_at: datetime | None = None,
                   priority: int | None = None, queue: str | None = None,
                   who: str = "python") -> Job:
        """Change a waiting or held job's ``run_at``, ``priority`` or ``queue``, checked as
        an enqueue checks them; a running or finished job raises ``JobStateError``."""
        return edit_job(self, job_id, who, run_at=run_at, priority=priority, queue=queue)

    def queue_stats(self, include_finished: bool = True) -> list[QueueStats]:
        """Per queue counts (paused flag included); ``include_finished=False`` skips
        counting retained history."""
        stats = self.store.jobs.queues_stats(include_finished=include_finished)
        paused = self.store.long_jobs.queues_paused()
        seen = {s.queue for s in stats}
        out = [replace(s, paused=s.queue in paused) for s in stats]
        out += [QueueStats(q, 0, 0, 0, 0, 0, 0, None, paused=True) for q in paused - seen]
        return sorted(out, key=lambda s: s.queue)

    def history(self, queue: str | None = None, task: str | None = None,
                hours: float = 24.0) -> list[HistoryBucket]:
        """The history charts' five-minute buckets of the last ``hours`` (oldest first):
        one queue's, one task's, or (neither given) every queue's and task's; written by
        the leader (observe/rollup.py) and kept ``Settings.history_retention``."""
        if queue is not None and task is not None:
            raise ConfigurationError("history is kept per queue or per task: give one of them")
        if not 0 < hours <= 24 * 366:  # (NaN fails this too)
            raise ConfigurationError(f"history: hours must be > 0 and at most a year, "
                                     f"not {hours!r}")
        since = self.clock.now() - timedelta(hours=hours)
        if queue is not None:
            return self.store.observe.history_list(since, queue=queue, task="")
        if task is not None:
            return self.store.observe.history_list(since, queue="", task=task)
        return self.store.observe.history_list(since)

    def known_queues(self) -> set[str]:
        """Queues declared in code (tasks, ``app.queue``, schedules) or seen in the table
        (jobs waiting, running or dead; paused queues). Reads no finished history."""
        return known_queues(self.runtime.registry, self.store)

    def unknown_queue_warning(self, queue: str) -> str | None:
        """A warning naming the known queues when ``queue`` is none of them (a typo?)."""
        return unknown_queue_warning(self.runtime.registry, self.store, queue)

    def pause_queue(self, queue: str) -> None:
        """Stop claims on ``queue``; running jobs stop at their next checkpoint."""
        self.store.long_jobs.queues_set_paused(check_queue(queue), True)

    def resume_queue(self, queue: str) -> None:
        """Claim from ``queue`` again; paused jobs resume from their checkpoints."""
        self.store.long_jobs.queues_set_paused(check_queue(queue), False)


def _batch_option(batch: Any, what: str) -> Batch | None:
    """``batch=`` must be a :class:`Batch` (its own checks ran when it was made)."""
    if batch is not None and not isinstance(batch, Batch):
        raise ConfigurationError(f"{what}: batch= takes a Batch(size=..., timeout=...), "
                                 f"not {batch!r}")
    return batch
