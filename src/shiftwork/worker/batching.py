"""Batch tasks in the worker: jobs collected per task, then one call for the lot.

Each job stays a job: it is claimed by the queue's one claim, held as its own ``Run``
(so the heartbeat renews its lease and the completer writes its outcome, fenced by its
attempt), and decided by the one ``Decide`` from what the call gave it. Only the call is
shared: a batch is handed to the queue's pool when it holds ``size`` jobs, or when
``timeout`` seconds (the runtime's clock) passed since its first job arrived.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from shiftwork.core.control import RetryIn
from shiftwork.core.errors import ConfigurationError, JobCancelled
from shiftwork.jobs.batch_item import BatchItem
from shiftwork.jobs.batching import item_results
from shiftwork.model.outcome import Outcome
from shiftwork.worker.run import JobTimeout, Run, flush_logs, flush_progress

if TYPE_CHECKING:
    from shiftwork.core.clock import Clock
    from shiftwork.jobs.task import Task
    from shiftwork.worker.decide import Decide

log = logging.getLogger("shiftwork.worker.batching")


class Batcher:
    """The batch tasks' jobs waiting for their call, per task; ``start(runs)`` is given
    each batch once it is due."""

    def __init__(self, clock: Clock, start: Callable[[list[Run]], None]) -> None:
        self.clock = clock
        self.start = start
        self._lock = threading.Lock()
        self._pending: dict[str, list[Run]] = {}
        self._since: dict[str, float] = {}  # the first pending job's arrival, per task

    def add(self, run: Run) -> None:
        batch = run.task.options.batch
        assert batch is not None
        with self._lock:
            pending = self._pending.setdefault(run.task.name, [])
            if not pending:
                self._since[run.task.name] = self.clock.monotonic()
            pending.append(run)
            full = self._take(run.task.name) if len(pending) >= batch.size else None
        if full:
            self.start(full)

    def flush_due(self, queue: str | None = None, claimed: bool = False) -> None:
        """Start the batches whose wait is over; with ``claimed`` (a claim of ``queue``
        was just dispatched), also those that wait for nothing (``timeout=0``)."""
        now = self.clock.monotonic()
        due: list[list[Run]] = []
        with self._lock:
            for name, runs in list(self._pending.items()):
                if not runs or (queue is not None and runs[0].job.queue != queue):
                    continue
                timeout = runs[0].task.options.batch.timeout  # type: ignore[union-attr]
                if now - self._since[name] >= timeout and (claimed or timeout > 0):
                    due.append(self._take(name))
        for runs in due:
            self.start(runs)

    def _take(self, name: str) -> list[Run]:
        runs = self._pending.pop(name, [])
        self._since.pop(name, None)
        return runs

    def pending(self) -> int:
        with self._lock:
            return sum(len(r) for r in self._pending.values())


def call_batch(decide: Decide, runs: list[Run]) -> None:
    """The body of a pool thread for one batch: one call, then each job's own outcome.

    Only the first job of the call is marked as in user code, so a shutdown past its
    grace interrupts the thread once.
    """
    try:
        live = _begin(decide, runs)
        if not live:
            return
        head = live[0]
        head.thread_id = threading.get_ident()
        outcomes: list[Outcome]
        try:
            with head.lock:
                head.in_user_code = not head.finished
            if not head.in_user_code:
                return  # shut down before it started: the shutdown hands them back
            try:
                value = head.task.fn(_items(live))
            finally:
                with head.lock:
                    head.in_user_code = False
                for run in live:
                    flush_progress(run)
                    flush_logs(run)
            outcomes = _outcomes(decide, live, value)
        except JobTimeout:
            return  # interrupted at shutdown: the shutdown finalized and hands them back
        except BaseException as exc:  # the whole call failed: every job's attempt fails
            outcomes = _failed(decide, live, exc)
        for run, outcome in zip(live, outcomes, strict=True):
            run.finalize(outcome)
    except BaseException:  # an exception injected after the call returned
        log.debug("batch: exception after the call", exc_info=True)


async def call_batch_async(decide: Decide, runs: list[Run]) -> None:
    """:func:`call_batch` for an ``async def`` batch task, on the worker's event loop.
    No job's asyncio task is the call's: cancelling one job must not cancel the call."""
    live = _begin(decide, runs)
    if not live:
        return
    outcomes: list[Outcome]
    try:
        try:
            value = await live[0].task.fn(_items(live))
        finally:
            if any(r.ctx._pending_progress is not None or (r.logs and r.logs.has_pending())
                   for r in live):
                await asyncio.to_thread(_flush_all, live)
        outcomes = _outcomes(decide, live, value)
    except asyncio.CancelledError:
        raise  # the loop is going away at shutdown, which hands the jobs back
    except BaseException as exc:
        outcomes = _failed(decide, live, exc)
    for run, outcome in zip(live, outcomes, strict=True):
        run.finalize(outcome)


def _begin(decide: Decide, runs: list[Run]) -> list[Run]:
    """The runs that take part: a job finalized while it waited (handed back at shutdown)
    is left out, and one cancelled meanwhile is finalized as cancelled and left out."""
    live = [run for run in runs if run.begin()]
    for run in [r for r in live if r.ctx.cancelled]:
        live.remove(run)
        run.finalize(decide.error(run, JobCancelled(
            f"job {run.job.id} was cancelled before it started")))
    return live


def _items(live: list[Run]) -> list[BatchItem]:
    return [BatchItem(tuple(r.job.args), dict(r.job.kwargs), r.ctx) for r in live]


def _outcomes(decide: Decide, live: list[Run], value: Any) -> list[Outcome]:
    results = item_results(value, len(live), live[0].task.name)
    return [_item_outcome(decide, run, result)
            for run, result in zip(live, results, strict=True)]


def _failed(decide: Decide, live: list[Run], exc: BaseException) -> list[Outcome]:
    kind = "retry_requested" if isinstance(exc, RetryIn) else "exception"
    return [decide.error(run, exc, kind=kind) for run in live]


def _flush_all(live: list[Run]) -> None:
    for run in live:
        flush_progress(run)
        flush_logs(run)


def _item_outcome(decide: Decide, run: Run, value: Any) -> Outcome:
    """An item's result, or the exception that fails it alone (its own attempt, backoff)."""
    if isinstance(value, RetryIn):
        return decide.error(run, value, kind="retry_requested")
    if isinstance(value, BaseException):
        return decide.error(run, value)
    return decide.success(run, value)


def check_batch_queues(tasks: Iterable[Task[Any, Any]], queues: set[str],
                       process_queues: set[str], ceilings: set[str]) -> None:
    """A queue that serves a batch task serves batch tasks only (its producer claims a
    batch per slot, which would hold that many plain jobs waiting), and not in child
    processes, nor under a queue's memory ceiling (which runs each job in a child)."""
    for queue in sorted(queues):
        here = [t for t in tasks if t.options.queue == queue and not t.internal]
        batched = [t.name for t in here if t.options.batch is not None]
        if not batched:
            continue
        plain = [t.name for t in here if t.options.batch is None]
        if plain:
            raise ConfigurationError(
                f"queue {queue}: batch task {batched[0]} shares it with task {plain[0]}, "
                "which is not one: give the batch tasks a queue of their own "
                "(@app.task(queue=..., batch=...))")
        if queue in process_queues or queue in ceilings:
            raise ConfigurationError(
                f"queue {queue}: batch task {batched[0]} cannot run with the process "
                "executor (:process) or a queue's memory ceiling, which run each job in "
                "a child process of its own")
