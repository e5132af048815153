"""Tasks: a registered function plus its options, and the requests that enqueue it."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, Protocol, TypeVar

from shiftwork.core.backoff import DEFAULT_BACKOFF, Backoff
from shiftwork.core.bounds import MAX_ATTEMPTS, instant, later, seconds, whole
from shiftwork.core.errors import (
    ConfigurationError,
    DependencyError,
    PayloadError,
    UnknownTaskError,
)
from shiftwork.core.memory import MEMORY_META_KEY, parse_memory_limit
from shiftwork.core.names import check_queue, check_task_name
from shiftwork.core.payload import check_text, encode_args, encode_json, unique_digest
from shiftwork.jobs.batching import Batch, check_batch_function, check_batch_options
from shiftwork.jobs.dedup import dedup_rule
from shiftwork.jobs.handle import JobHandle, check_on_failure, dependency_ids
from shiftwork.model.limits import GROUP_META_KEY, GroupBy, RateLimit, check_group, positive_int
from shiftwork.model.new_job import DEDUP_META_KEY, NewJob
from shiftwork.model.records import EnqueueResult
from shiftwork.model.tags import TAGS_META_KEY, merged_tags

if TYPE_CHECKING:
    from shiftwork.core.clock import Clock
    from shiftwork.core.crypt import Keys
    from shiftwork.core.settings import Settings
    from shiftwork.jobs.waiting import ResultWaiter

P = ParamSpec("P")
R = TypeVar("R")


PRIORITY_MIN, PRIORITY_MAX = -100, 100


class TaskHost(Protocol):
    """What a task enqueues on: the App's Runtime behind the one insert pipeline
    (:class:`shiftwork.jobs.enqueue.Enqueuer`).

    A Protocol, not the Runtime: the Runtime's Registry holds tasks, so a task that
    named the Runtime (or the pipeline, which takes it) would import what imports it.
    """

    @property
    def settings(self) -> Settings: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def results(self) -> ResultWaiter: ...

    @property
    def keys(self) -> Keys | None: ...

    def submit(self, requests: list[JobRequest], conn: Any = None, session: Any = None
               ) -> list[EnqueueResult]: ...

    async def submit_async(self, requests: list[JobRequest], conn: Any = None,
                           session: Any = None) -> list[EnqueueResult]: ...

    def submit_stream(self, count: int, rows: Iterable[NewJob], conn: Any = None
                      ) -> list[EnqueueResult]: ...


@dataclass(frozen=True)
class TaskOptions:
    queue: str = "default"
    priority: int = 0  # higher runs first, within a queue
    max_attempts: int = 20
    retry: Backoff = DEFAULT_BACKOFF
    timeout: float | None = None  # seconds per attempt
    unique: bool | tuple[str, ...] = False  # True: all arguments; a tuple: those arguments
    concurrency: int | None = None  # at most this many running across the whole fleet
    rate_limit: RateLimit | None = None  # at most N starts per period, fleet-wide
    group_by: GroupBy | None = None  # a parameter's name, or a callable of the arguments
    group_concurrency: int | None = None  # at most this many running per group, fleet-wide
    group_rate_limit: RateLimit | None = None  # at most N starts per period per group
    store_result: bool = True  # False: the return value is not kept (job.result() is None)
    memory_limit: int | None = None  # bytes; runs each attempt in a watched child (memory.py)
    #: while jobs succeed, at least this many items (ctx.processed) per expect_items_within
    expect_items: int | None = None
    expect_items_within: float = 3600.0  # seconds
    tags: tuple[str, ...] = ()  # every job of the task carries these (tags.py)
    #: the key stays taken this many seconds from the enqueue, whatever the job's state
    unique_for: float | timedelta | None = None
    #: an enqueue while the key's job waits gives it the new arguments and moves it on
    debounce: float | timedelta | None = None
    unique_states: tuple[str, ...] | None = None  # the holder's states that hold the key
    batch: Batch | None = None  # one call per batch of jobs (jobs/batching.py)
    encrypt: bool = False  # its payloads sealed with the App's keys (jobs/sealing.py)


@dataclass(frozen=True)
class EnqueueOptions:
    delay: float | timedelta | None = None
    run_at: datetime | None = None
    priority: int | None = None
    queue: str | None = None
    key: str | None = None
    max_attempts: int | None = None
    conn: Any = None  # a psycopg connection whose transaction the job joins
    session: Any = None  # a SQLAlchemy Session or AsyncSession whose transaction it joins
    meta: dict[str, Any] | None = None
    group: str | int | None = None  # the job's group (else the task's group_by decides)
    after: Any = None  # jobs (or ids) this one runs after (docs/composition.md)
    on_failure: str = "cancel"  # after= a job that died or was cancelled: "cancel" or "run"
    memory_limit: int | str | None = None  # this job's own ceiling (else the task's, the queue's)
    tags: Any = None  # more tags for this job, after the task's own (tags.py)
    # Any of these three replaces all three of the task's (jobs/dedup.py)
    unique_for: float | timedelta | None = None
    debounce: float | timedelta | None = None
    unique_states: Any = None


_NO_OPTIONS = EnqueueOptions()  # frozen: one shared instance for calls without overrides


def _check_priority(priority: int, what: str = "priority") -> int:
    return whole(priority, what, PRIORITY_MIN, PRIORITY_MAX)


def _takes_context(fn: Callable[..., Any]) -> bool:
    params = list(inspect.signature(fn).parameters.values())
    if not params:
        return False
    first = params[0]
    return first.name == "ctx" or getattr(first.annotation, "__name__", first.annotation) in (
        "JobContext",
        "shiftwork.JobContext",
    )


class Task(Generic[P, R]):
    """A function registered on an :class:`~shiftwork.App`."""

    def __init__(self, host: TaskHost, fn: Callable[..., Any], name: str,
                 options: TaskOptions) -> None:
        self.host = host  # what the task enqueues on
        self.fn = fn
        self.name = check_task_name(name)
        self.options = options
        self.is_async = asyncio.iscoroutinefunction(fn)
        self.takes_context = _takes_context(fn)
        #: runs even when cancelled before it began: a workflow must compensate (runner.py)
        self.handles_cancel = False
        #: shiftwork's own (workflow/children.py): never listed for people, and no job of
        #: it is built here, so neither an enqueue nor a schedule can start one
        self.internal = False
        #: the meta of a job with the task's own options: its tags, if it has any
        self._plain_meta = json.dumps({TAGS_META_KEY: list(options.tags)}) \
            if options.tags else "{}"
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())
        if options.batch is not None:
            # The function takes the list of items; a job's own arguments are whatever
            # it was enqueued with (JSON), checked by the function: no parameters declared.
            check_batch_function(fn, name)
            check_batch_options(name, timeout=options.timeout,
                                memory_limit=options.memory_limit, unique=options.unique,
                                group_by=options.group_by,
                                dedup=(options.unique_for, options.debounce,
                                       options.unique_states) != (None, None, None))
            self.takes_context = False
            params = [inspect.Parameter("args", inspect.Parameter.VAR_POSITIONAL),
                      inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD)]
        elif self.takes_context:
            params = params[1:]
        self._signature = sig.replace(parameters=params)
        self._param_names = [] if options.batch is not None else [p.name for p in params]
        # Plain parameters only (no *args, **kwargs, positional-only or keyword-only): then
        # a call's arguments can be checked without inspect's binder, which is slow.
        self._args_aad = f"args:{self.name}"  # what sealed arguments are bound to
        self._plain_params = all(p.kind is p.POSITIONAL_OR_KEYWORD for p in params)
        self._fits_by_length: dict[int, bool] = {}
        self._required = [p.name for p in params if p.default is p.empty]
        if isinstance(options.unique, tuple):
            unknown = [a for a in options.unique if a not in self._param_names]
            if unknown:
                raise ConfigurationError(
                    f"task {name}: unique names {unknown} which are not parameters of the function"
                )
        self._dedup = dedup_rule(options.unique_for, options.debounce, options.unique_states,
                                 f"task {name}")
        if self._dedup is not None and options.unique is False:
            raise ConfigurationError(
                f"task {name}: unique_for, debounce and unique_states need a unique key: "
                "give unique=True (all arguments) or the arguments' names, or pass them "
                "per call with using(key=..., unique_for=...)")
        check_queue(options.queue)
        _check_priority(options.priority, f"task {name}: priority")
        whole(options.max_attempts, f"task {name}: max_attempts", 1, MAX_ATTEMPTS)
        if options.concurrency is not None:
            whole(options.concurrency, f"task {name}: concurrency", 1, MAX_ATTEMPTS)
        if options.timeout is not None:  # stored per job, as seconds
            self.options = options = replace(options, timeout=seconds(
                options.timeout, f"task {name}: timeout", allow_zero=False))
        positive_int(options.group_concurrency, f"task {name}: group_concurrency")
        if isinstance(options.group_by, str) and options.group_by not in self._param_names:
            raise ConfigurationError(
                f"task {name}: group_by={options.group_by!r} is not a parameter of the "
                f"function (its parameters: {', '.join(self._param_names) or 'none'})")
        if options.group_by is not None and not isinstance(options.group_by, str) \
                and not callable(options.group_by):
            raise ConfigurationError(f"task {name}: group_by must be a parameter's name or a "
                                     "callable of the arguments")

    def __repr__(self) -> str:
        return f"<Task {self.name} queue={self.options.queue}>"

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Call the function directly, in-process (no job)."""
        return self.fn(*args, **kwargs)  # type: ignore[no-any-return]

    # -- building requests -------------------------------------------------

    def using(self, **options: Any) -> BoundTask[P, R]:
        """Per-enqueue overrides: delay, run_at, priority, queue, key, max_attempts, meta,
        group, memory_limit, tags (added to the task's own); ``unique_for``, ``debounce``,
        ``unique_states`` (how the key is held; any of them replaces the task's three);
        ``conn`` (a psycopg or sqlite3 connection) or ``session`` (a SQLAlchemy Session or
        AsyncSession): the job joins that transaction."""
        return BoundTask(self, EnqueueOptions(**options))

    def call(self, *args: P.args, **kwargs: P.kwargs) -> JobRequest:
        """A request to enqueue this task, for :meth:`App.enqueue_many`."""
        return JobRequest(self, tuple(args), dict(kwargs), _NO_OPTIONS)

    def enqueue(self, *args: P.args, **kwargs: P.kwargs) -> JobHandle[R]:
        """Enqueue one job; returns after its commit (or joins ``conn``'s transaction).

        The handle's ``result(timeout)`` waits for the job's return value.
        """
        return self.call(*args, **kwargs).enqueue()

    async def enqueue_async(self, *args: P.args, **kwargs: P.kwargs) -> JobHandle[R]:
        """:meth:`enqueue` for asyncio code: on Postgres the insert runs on the App's async
        connection pool (opened on first use); on SQLite, in a thread."""
        return await self.call(*args, **kwargs).enqueue_async()

    def enqueue_many(
        self, calls: Iterable[tuple[Any, ...] | dict[str, Any]], conn: Any = None
    ) -> list[EnqueueResult]:
        """Enqueue many jobs in one round trip per batch: each item a tuple or a dict."""
        self._refuse_internal()
        if (self.options.unique is False and self._plain_params
                and self.options.group_by is None):
            # The bulk path: the task's own options, so each job is only its arguments;
            # each is validated as the store streams it (a bad one aborts them all).
            calls = calls if isinstance(calls, (list, tuple)) else list(calls)
            return self.host.submit_stream(len(calls), map(self._build_plain, calls), conn)
        requests = [
            JobRequest(self, (), dict(c), _NO_OPTIONS)
            if isinstance(c, dict)
            else JobRequest(self, tuple(c), {}, _NO_OPTIONS)
            for c in calls
        ]
        return self.host.submit(requests, conn=conn)

    # -- validation ----------------------------------------------------------

    def _refuse_internal(self) -> None:
        if self.internal:
            raise UnknownTaskError(f"task {self.name!r} is internal to shiftwork: it runs only "
                                   "what shiftwork enqueues itself, and cannot be enqueued "
                                   "or scheduled")

    def _build_plain(self, call: tuple[Any, ...] | dict[str, Any]) -> NewJob:
        """:meth:`build` for a job with the task's own options: the same checks, less work."""
        if isinstance(call, dict):
            args: tuple[Any, ...] = ()
            kwargs = dict(call)
            fits: bool | None = self._arguments_fit(args, kwargs)
        else:
            args, kwargs = tuple(call), {}
            # Positional calls fit or not by their length alone: remember the answer.
            fits = self._fits_by_length.get(len(args))
            if fits is None:
                fits = self._fits_by_length[len(args)] = self._arguments_fit(args, kwargs)
        if not fits:
            return self._build_checked(args, kwargs, _NO_OPTIONS, None)  # raises, naming it
        o = self.options
        return NewJob(self.name, o.queue, self._args_json(args, kwargs),
                      o.priority, o.max_attempts, None, None, o.timeout, self._plain_meta)

    def build(self, args: tuple[Any, ...], kwargs: dict[str, Any], opts: EnqueueOptions,
              now: datetime | None, *, seal: bool = True) -> NewJob:
        """Validate a call's arguments and options into the row an enqueue inserts.
        ``seal=False``: an encrypted task's arguments left clear (a schedule's definition:
        its occurrences are sealed as they are inserted, jobs/enqueue.py)."""
        self._refuse_internal()
        if (opts is _NO_OPTIONS and not (args and kwargs) and self.options.unique is False
                and self._plain_params and self.options.group_by is None and seal):
            return self._build_plain(kwargs or args)  # no overrides: the bulk path's checks
        return self._build_checked(args, kwargs, opts, now, seal)

    def _build_checked(self, args: tuple[Any, ...], kwargs: dict[str, Any],
                       opts: EnqueueOptions, now: datetime | None, seal: bool = True
                       ) -> NewJob:
        if (not self._arguments_fit(args, kwargs) or self.options.unique is not False
                or self.options.group_by is not None):
            try:
                bound = self._signature.bind(*args, **kwargs)
            except TypeError as exc:
                raise PayloadError(
                    f"{self.name}: arguments do not match {self._signature}: {exc}") from None
        args_json = self._args_json(args, kwargs, seal)
        queue = check_queue(opts.queue) if opts.queue is not None else self.options.queue
        priority = _check_priority(opts.priority, f"{self.name}: priority") \
            if opts.priority is not None else self.options.priority
        run_at = instant(opts.run_at, f"{self.name}: run_at") if opts.run_at is not None \
            else None
        if opts.delay is not None:
            delay = seconds(opts.delay, f"{self.name}: delay")
            if delay > 0:
                run_at = later(now or self.host.clock.now(), delay)
        unique_key: str | None = None
        if opts.key is not None:
            unique_key = check_text(f"{self.name}:{opts.key}", f"{self.name}: unique key",
                                    self.host.settings.limit("max_unique_key_bytes"))
        elif self.options.unique:
            bound.apply_defaults()
            unique = self.options.unique
            names = self._param_names if unique is True else list(unique or ())
            unique_key = unique_digest(self.name, {n: bound.arguments.get(n) for n in names})
        keys = self._keys()
        if unique_key is not None and keys is not None:
            # An encrypted task's key would tell its arguments: a keyed digest instead,
            # equal for equal keys, so deduplication works the same (core/crypt.py).
            unique_key = f"{self.name}:hmac:{keys.digest(unique_key)}"
        dedup = None
        rule = self._dedup if opts.unique_for is None and opts.debounce is None \
            and opts.unique_states is None else dedup_rule(
                opts.unique_for, opts.debounce, opts.unique_states, f"{self.name}: using()")
        if rule is not None:
            if unique_key is None:
                raise ConfigurationError(f"{self.name}: unique_for, debounce and "
                                         "unique_states need a unique key: using(key=...)")
            if rule.debounce is not None and run_at is not None:
                raise ConfigurationError(f"{self.name}: debounce cannot be combined with a "
                                         "delay or run_at: the debounce window sets when "
                                         "the job runs")
            dedup, unique_key = rule.for_key(unique_key), None
        max_attempts = whole(opts.max_attempts, f"{self.name}: max_attempts", 1, MAX_ATTEMPTS) \
            if opts.max_attempts is not None else self.options.max_attempts
        meta = opts.meta
        group = opts.group if opts.group is not None else self._group_of(bound) \
            if self.options.group_by is not None else None
        if group is not None:  # the claim reads a job's group from its meta
            meta = {**(meta or {}), GROUP_META_KEY: check_group(group, f"{self.name}: group")}
        if opts.memory_limit is not None and self.options.batch is not None:
            raise ConfigurationError(f"{self.name}: using(memory_limit=...) cannot be given "
                                     "to a batch task's job: its jobs run in one call")
        if opts.memory_limit is not None:  # the worker reads a call's own ceiling from its meta
            meta = {**(meta or {}), MEMORY_META_KEY: parse_memory_limit(
                opts.memory_limit, f"{self.name}: using()")}
        tags = merged_tags(self.options.tags, opts.tags, f"{self.name}: tags")
        if tags:
            meta = {**(meta or {}), TAGS_META_KEY: list(tags)}
        if dedup is not None:  # the row's unique_key column is the partial index's
            meta = {**(meta or {}), DEDUP_META_KEY: dedup.key}
        after: tuple[int, ...] = ()
        if opts.after is not None:
            after = dependency_ids(opts.after)
            if unique_key is not None or dedup is not None:
                raise DependencyError(f"{self.name}: after= cannot be combined with a unique "
                                      "key (the job it would join may not wait for the same)")
            if run_at is not None:
                raise DependencyError(f"{self.name}: after= cannot be combined with a delay "
                                      "or run_at: the job runs when its dependencies allow")
        return NewJob(
            task=self.name, queue=queue, args_json=args_json, priority=priority,
            max_attempts=max_attempts, run_at=run_at, unique_key=unique_key,
            timeout=self.options.timeout,
            meta_json=encode_json(meta, f"{self.name}: meta",
                                  self.host.settings.limit("max_args_bytes"))
            if meta else "{}",
            after=after, on_failure=check_on_failure(opts.on_failure), dedup=dedup,
        )

    def _keys(self) -> Keys | None:
        return self.host.keys if self.options.encrypt else None

    def _args_json(self, args: tuple[Any, ...], kwargs: dict[str, Any], seal: bool = True
                   ) -> str:
        """The arguments checked and encoded; sealed when the task is encrypted (the job's
        id is not known yet: the ciphertext is bound to the task, jobs/sealing.py)."""
        text = encode_args(self.name, args, kwargs, self.host.settings.limit("max_args_bytes"),
                           self._param_names)
        keys = self._keys()
        if keys is None or not seal:
            return text
        return keys.seal_json(text, self._args_aad)

    def _group_of(self, bound: inspect.BoundArguments) -> Any:
        group_by = self.options.group_by
        bound.apply_defaults()
        if callable(group_by):
            return group_by(*bound.args, **bound.kwargs)
        return bound.arguments.get(str(group_by))

    def _arguments_fit(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """The fast check: True when ``inspect`` would bind these arguments (False: ask it)."""
        if not self._plain_params:
            return False
        names = self._param_names
        if len(args) > len(names):
            return False
        if kwargs:
            positional = names[:len(args)]
            if any(k not in names or k in positional for k in kwargs):
                return False
        return all(n in kwargs for n in self._required[len(args):])


class BoundTask(Generic[P, R]):
    def __init__(self, task: Task[P, R], options: EnqueueOptions) -> None:
        self.task = task
        self.options = options

    def using(self, **options: Any) -> BoundTask[P, R]:
        return BoundTask(self.task, replace(self.options, **options))

    def call(self, *args: P.args, **kwargs: P.kwargs) -> JobRequest:
        return JobRequest(self.task, tuple(args), dict(kwargs), self.options)

    def enqueue(self, *args: P.args, **kwargs: P.kwargs) -> JobHandle[R]:
        return self.call(*args, **kwargs).enqueue()

    async def enqueue_async(self, *args: P.args, **kwargs: P.kwargs) -> JobHandle[R]:
        return await self.call(*args, **kwargs).enqueue_async()


@dataclass(frozen=True)
class JobRequest:
    task: Task[Any, Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    options: EnqueueOptions

    def enqueue(self) -> JobHandle[Any]:
        if self.options.session is not None and self.options.conn is not None:
            raise ConfigurationError("using(): give conn= or session=, not both")
        host = self.task.host
        result = host.submit([self], conn=self.options.conn, session=self.options.session)[0]
        return JobHandle(result.id, result.created, host.results)

    async def enqueue_async(self) -> JobHandle[Any]:
        host = self.task.host
        result = (await host.submit_async([self], conn=self.options.conn,
                                          session=self.options.session))[0]
        return JobHandle(result.id, result.created, host.results)
