"""The one insert pipeline: the end of every enqueue path, sync and async.

Every enqueue (a task's, ``enqueue_many``, a schedule's occurrences, a group, a chain, a
graph, a workflow's children) ends here: the tracing span, the store's insert, then the
enqueue hooks (the inline test mode) once the jobs are real. Sync and async share these
decisions and differ only in their I/O. The wake-ups are the store's, sent in the
insert's own transaction, with the payloads ``store.wakeups.due_wakeups`` chooses for
both paths (one wake-up per due job, not one per listening process).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING, Any

from shiftwork.composition import settling
from shiftwork.core.errors import DependencyError
from shiftwork.jobs.sealing import seal_rows
from shiftwork.jobs.sessions import enqueue_in_async_session, session_connection
from shiftwork.model.new_job import NewJob
from shiftwork.model.records import EnqueueResult
from shiftwork.observe.tracing import enqueue_span, recording

if TYPE_CHECKING:
    from shiftwork.core.clock import Clock
    from shiftwork.core.crypt import Keys
    from shiftwork.core.settings import Settings
    from shiftwork.jobs.task import JobRequest
    from shiftwork.jobs.waiting import ResultWaiter
    from shiftwork.runtime import Runtime

Write = Callable[[list[NewJob], Any], list[EnqueueResult]]


class Enqueuer:
    """A Runtime seen through this pipeline: what the App's tasks enqueue on
    (:class:`~shiftwork.jobs.task.TaskHost`)."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    @property
    def settings(self) -> Settings:
        return self.rt.settings

    @property
    def clock(self) -> Clock:
        return self.rt.clock

    @property
    def results(self) -> ResultWaiter:
        return self.rt.results

    @property
    def keys(self) -> Keys | None:
        return self.rt.keys

    def submit(self, requests: list[JobRequest], conn: Any = None, session: Any = None
               ) -> list[EnqueueResult]:
        """Enqueue ``requests`` (in ``conn``'s or a SQLAlchemy ``session``'s transaction)."""
        if session is not None:
            conn = session_connection(session)
        return enqueue_requests(self.rt, requests, conn=conn)

    async def submit_async(self, requests: list[JobRequest], conn: Any = None,
                           session: Any = None) -> list[EnqueueResult]:
        if session is not None:
            return await enqueue_in_async_session(
                session, partial(enqueue_requests_async, self.rt, requests),
                partial(enqueue_requests, self.rt, requests))
        return await enqueue_requests_async(self.rt, requests, conn=conn)

    def submit_stream(self, count: int, rows: Iterable[NewJob], conn: Any = None
                      ) -> list[EnqueueResult]:
        return insert_stream(self.rt, count, rows, conn)


def _with_dependencies(rows: list[NewJob]) -> bool:
    return any(r.after or r.after_new for r in rows)


def _queues(rows: list[NewJob]) -> set[str]:
    return {r.queue for r in rows}


def enqueue_requests(rt: Runtime, requests: Iterable[JobRequest], conn: Any = None
                     ) -> list[EnqueueResult]:
    """Validate every request first, then insert them in one round trip per batch."""
    return insert_rows(rt, _build(rt, requests), conn)


async def enqueue_requests_async(rt: Runtime, requests: Iterable[JobRequest],
                                 conn: Any = None) -> list[EnqueueResult]:
    """:func:`enqueue_requests` for asyncio code: the same checks, the async insert."""
    return await insert_rows_async(rt, _build(rt, requests), conn)


def _build(rt: Runtime, requests: Iterable[JobRequest]) -> list[NewJob]:
    now = rt.clock.now()
    return [r.task.build(r.args, r.kwargs, r.options, now) for r in requests]


def insert_rows(rt: Runtime, rows: list[NewJob], conn: Any = None) -> list[EnqueueResult]:
    """Insert validated jobs (built by a task).

    The store batches as suits its engine (Postgres streams one COPY; SQLite commits
    every 500 rows so workers can claim in between).
    """
    if rt.keys is not None:  # a schedule's occurrences of an encrypted task
        tasks = rt.registry.tasks
        seal_rows(rt.keys, lambda name: name in tasks and tasks[name].options.encrypt, rows)
    if _with_dependencies(rows):  # dependencies: one transaction
        return insert_graph(rt, rows, conn)[0]
    return _insert(rt, rows, conn, lambda rows, c: rt.store.jobs.insert(rows, conn=c))


def insert_stream(rt: Runtime, count: int, rows: Iterable[NewJob], conn: Any = None
                  ) -> list[EnqueueResult]:
    """Insert ``count`` jobs without unique keys, built as the store reads them."""
    if recording() or rt.registry.enqueue_hooks or rt.ambient_transaction is not None:
        return insert_rows(rt, list(rows), conn)  # the span and the hooks need the rows
    return rt.store.jobs.insert_stream(count, rows, conn=conn)


def insert_graph(rt: Runtime, rows: list[NewJob], conn: Any = None, *, group: bool = False,
                 callback_of: int | None = None, with_callback: bool = False
                 ) -> tuple[list[EnqueueResult], int | None]:
    """Insert jobs with dependencies, a group, or a group's callback (compose.py):
    composition/settling.py's ``insert_graph`` in one transaction, on the same pipeline
    as every other enqueue (tracing context, an ambient transaction, the inline mode's hooks)."""
    made: list[int | None] = [None]

    def write(rows: list[NewJob], c: Any) -> list[EnqueueResult]:
        results, made[0] = settling.insert_graph(
            rt.store.deps, rows, c, group=group, callback_of=callback_of,
            with_callback=with_callback)
        return results

    return _insert(rt, rows, conn, write), made[0]


def _insert(rt: Runtime, rows: list[NewJob], conn: Any, write: Write) -> list[EnqueueResult]:
    ambient = None
    if conn is None and rt.ambient_transaction is not None:
        conn = ambient = rt.ambient_transaction()
    with enqueue_span(rows) as rows:  # OpenTelemetry, when installed: context into meta
        results = write(rows, conn)
    hooks = rt.registry.enqueue_hooks
    if hooks:
        queues = _queues(rows)

        def run_hooks() -> None:
            for hook in list(hooks):
                hook(results, queues)

        if conn is None:
            run_hooks()
        elif ambient is not None and rt.on_commit is not None:
            rt.on_commit(run_hooks)  # the jobs become real when it commits
        # else: in a caller's transaction: not yet real, and no way to hear its commit
    return results


async def insert_rows_async(rt: Runtime, rows: list[NewJob], conn: Any = None
                            ) -> list[EnqueueResult]:
    """:func:`insert_rows` for asyncio code: the store's async insert (Postgres: its async
    pool; SQLite: a thread), the same span and hooks."""
    if not rt.ready:  # the first use checks the schema: a blocking query
        await asyncio.to_thread(lambda: rt.store)
    if _with_dependencies(rows):
        if conn is not None:
            raise DependencyError("after= in an async connection's transaction is not "
                                  "supported; enqueue it with a sync conn= or none")
        # Dependencies are written in one transaction of the sync store: in a thread.
        return await asyncio.to_thread(insert_rows, rt, rows)
    with enqueue_span(rows) as rows:
        results = await rt.store.jobs.insert_async(rows, conn=conn)
    hooks = rt.registry.enqueue_hooks
    if hooks and conn is None:
        queues = _queues(rows)
        for hook in list(hooks):
            # In a thread: the inline mode runs async tasks on an event loop of its own.
            await asyncio.to_thread(hook, results, queues)
    return results
