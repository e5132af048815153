"""Run one job attempt and decide its outcome.

Sync functions run on the queue's thread pool, async ones on the worker's event
loop. The outcome is a value (see :mod:`shiftwork.outcome`); writing it is the
completer's job. A run is *finalized* exactly once: by its own return, or by
the watchdog (timeout) or shutdown, whichever comes first; the loser's result
is discarded.
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import logging
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from ..context import JobContext
from ..errors import JobCancelled, JobPaused, LeaseLost, PayloadTooLargeError, RetryIn, Snooze
from ..job import ClaimedJob
from ..observe.tracing import execution_span, recording
from ..outcome import Outcome
from ..payload import encode_json, storable_text
from ..states import JobState

if TYPE_CHECKING:
    from ..app import App
    from ..task import Task
    from .pool import ThreadPool

log = logging.getLogger("shiftwork.worker.executor")


class JobTimeout(BaseException):
    """Raised inside a sync job's thread when its timeout passes."""


@dataclass(eq=False)
class Run:
    job: ClaimedJob
    task: Task[Any, Any]
    ctx: JobContext
    started: float  # claimed at; reset when the attempt begins to run
    timeout: float | None
    on_done: Callable[[Run, Outcome], None]
    on_begin: Callable[[Run], None] | None = None
    deadline: float | None = None  # set when it begins: a job claimed ahead is not timed yet
    begun: bool = False
    thread_id: int | None = None
    atask: asyncio.Task[Any] | None = None
    finished: bool = False
    in_user_code: bool = False  # a sync job's thread is inside the task function
    process: Any = None  # the child process, for queues run with the process executor
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def of(cls, app: App, job: ClaimedJob, task: Task[Any, Any],
           on_done: Callable[[Run, Outcome], None],
           on_begin: Callable[[Run], None] | None = None) -> Run:
        """The run of a claimed job: its context, and its timeout (the job's, else the task's)."""
        ctx = JobContext(app, job.id, job.task, job.queue, job.attempt, job.max_attempts,
                         last_checkpoint=job.checkpoint, meta=job.meta)
        return cls(job=job, task=task, ctx=ctx, started=time.monotonic(),
                   timeout=task.options.timeout if job.timeout is None else job.timeout,
                   on_done=on_done, on_begin=on_begin)

    def begin(self) -> bool:
        """The attempt starts running now; False if it was finalized while it waited."""
        with self.lock:
            if self.finished:
                return False
            self.begun = True
            self.started = time.monotonic()
            if self.timeout:
                self.deadline = self.started + self.timeout
        if self.on_begin is not None:
            self.on_begin(self)
        return True

    def finalize(self, outcome: Outcome) -> bool:
        """Deliver the outcome once; False if another path got there first."""
        with self.lock:
            if self.finished:
                return False
            self.finished = True
        self.on_done(self, outcome)
        return True


def error_record(exc: BaseException, attempt: int, kind: str = "exception") -> dict[str, Any]:
    return {
        "attempt": attempt,
        "kind": kind,
        "type": f"{type(exc).__module__}.{type(exc).__qualname__}".removeprefix("builtins."),
        "message": storable_text(str(exc), 2000),
        "traceback": storable_text("".join(traceback.format_exception(exc))[-8000:], 8000),
    }


def flush_progress(run: Run) -> None:
    """The attempt ended: write progress that was still throttled, if any."""
    if run.ctx._pending_progress is None or run.finished:
        return
    try:
        run.ctx.flush_progress()
    except (Exception, LeaseLost, JobCancelled):
        log.debug("job %s: final progress not written", run.job.id, exc_info=True)


class Executor:
    def __init__(self, app: App, loop: asyncio.AbstractEventLoop | None,
                 concurrency: dict[str, int] | None = None) -> None:
        self.app = app
        self.loop = loop
        # Async jobs run on one loop, not a pool of threads: a semaphore per queue keeps
        # them to the queue's concurrency when the producer claims ahead.
        self.slots = {q: asyncio.Semaphore(n) for q, n in (concurrency or {}).items()}

    # -- deciding -----------------------------------------------------------------

    def outcome_for_success(self, run: Run, result: Any) -> Outcome:
        try:
            result_json = encode_json(result, f"{run.job.task}: return value",
                                      self.app.settings.limit("max_result_bytes")) \
                if result is not None else None
        except PayloadTooLargeError as exc:  # kept out of the database: the attempt fails
            return self.outcome_for_error(run, exc)
        except Exception:
            result_json = json.dumps(repr(result)[:2000])
        return self._outcome(run, JobState.SUCCEEDED, result_json=result_json)

    def outcome_for_snooze(self, run: Run, snooze: Snooze) -> Outcome:
        run_at = snooze.until or self.app.clock.now() + timedelta(seconds=snooze.seconds)
        return self._outcome(run, JobState.SCHEDULED, run_at=run_at)

    def outcome_for_error(self, run: Run, exc: BaseException, kind: str = "exception") -> Outcome:
        if isinstance(exc, Snooze):
            return self.outcome_for_snooze(run, exc)
        job = run.job
        record = error_record(exc, job.attempt, kind)
        if isinstance(exc, JobPaused):  # the checkpoint already gave the job back
            return self._outcome(run, JobState.AVAILABLE, error={**record, "kind": "paused"})
        if isinstance(exc, (JobCancelled, asyncio.CancelledError)) and run.ctx.cancelled:
            return self._outcome(run, JobState.CANCELLED, error={**record, "kind": "cancelled"})
        policy = run.task.options.retry
        return self.outcome_for_failure(run, record, policy.retryable(exc),
                                        policy.delay(job.attempt, exc))

    def outcome_for_failure(self, run: Run, record: dict[str, Any], retryable: bool,
                            delay: float) -> Outcome:
        """Retry after ``delay`` seconds, or dead when attempts are spent or it can't retry."""
        job = run.job
        if job.attempt >= job.max_attempts or not retryable:
            return self._outcome(run, JobState.DEAD, error=record)
        run_at = self.app.clock.now() + timedelta(seconds=delay)
        return self._outcome(run, JobState.RETRYING, error={**record, "retry_in": delay},
                             run_at=run_at)

    def _outcome(self, run: Run, state: JobState, **kw: Any) -> Outcome:
        return Outcome(job_id=run.job.id, attempt=run.job.attempt, state=state,
                       duration=time.monotonic() - run.started, task=run.job.task,
                       queue=run.job.queue, **kw)

    # -- running ------------------------------------------------------------------

    def call_args(self, run: Run) -> tuple[list[Any], dict[str, Any]]:
        args = list(run.job.args)
        if run.task.takes_context:
            args.insert(0, run.ctx)
        return args, dict(run.job.kwargs)

    def run_sync(self, run: Run) -> None:
        """Body of a pool thread for one job."""
        run.thread_id = threading.get_ident()
        if not run.begin():
            return  # handed back or timed out before it started
        try:
            args, kwargs = self.call_args(run)
            try:
                with run.lock:
                    run.in_user_code = not run.finished
                if not run.in_user_code:
                    return  # timed out or shut down before it started
                try:
                    if run.ctx.cancelled:  # cancelled while it waited for a thread
                        raise JobCancelled(f"job {run.job.id} was cancelled before it started")
                    if recording():
                        with execution_span(run.job):
                            result = run.task.fn(*args, **kwargs)
                    else:  # no span: the context manager alone costs more than a no-op job
                        result = run.task.fn(*args, **kwargs)
                finally:
                    with run.lock:
                        run.in_user_code = False
                    flush_progress(run)
                outcome = self.outcome_for_success(run, result)
            except JobTimeout as exc:
                outcome = self.outcome_for_error(run, TimeoutError(
                    f"timed out after {run.task.options.timeout}s"), kind="timeout")
                del exc
            except RetryIn as exc:
                outcome = self.outcome_for_error(run, exc, kind="retry_requested")
            except BaseException as exc:
                outcome = self.outcome_for_error(run, exc)
            run.finalize(outcome)
        except BaseException:  # an exception injected after the job returned
            pass

    async def run_async(self, run: Run, slots: asyncio.Semaphore | None = None) -> None:
        if slots is not None:  # the queue's concurrency: jobs claimed ahead wait here
            async with slots:
                await self._run_async(run)
        else:
            await self._run_async(run)

    async def _run_async(self, run: Run) -> None:
        run.atask = asyncio.current_task()
        if not run.begin():  # handed back or cancelled before it started
            return
        args, kwargs = self.call_args(run)
        timeout = run.timeout
        try:
            try:
                if run.ctx.cancelled:
                    raise JobCancelled(f"job {run.job.id} was cancelled before it started")
                if recording():
                    with execution_span(run.job):
                        result = await asyncio.wait_for(run.task.fn(*args, **kwargs), timeout)
                else:
                    result = await asyncio.wait_for(run.task.fn(*args, **kwargs), timeout)
            finally:
                if run.ctx._pending_progress is not None:
                    await asyncio.to_thread(flush_progress, run)
            outcome = self.outcome_for_success(run, result)
        except TimeoutError as exc:
            outcome = self.outcome_for_error(run, TimeoutError(
                f"timed out after {timeout}s") if not str(exc) else exc, kind="timeout")
        except RetryIn as exc:
            outcome = self.outcome_for_error(run, exc, kind="retry_requested")
        except asyncio.CancelledError as exc:
            if not run.ctx.cancelled:
                run.finalize(self.outcome_for_error(run, exc))
                raise
            outcome = self.outcome_for_error(run, exc)
        except BaseException as exc:
            outcome = self.outcome_for_error(run, exc)
        run.finalize(outcome)

    def start(self, run: Run, pool: ThreadPool, in_process: bool = False) -> None:
        if in_process:
            from .process import run_in_process

            pool.submit(lambda: run_in_process(self, run))
        elif run.task.is_async:
            assert self.loop is not None, "async task without an event loop"
            asyncio.run_coroutine_threadsafe(
                self.run_async(run, self.slots.get(run.job.queue)), self.loop)
        else:
            pool.submit(lambda: self.run_sync(run))

    # -- interrupting --------------------------------------------------------------

    def cancel(self, run: Run) -> None:
        """Ask a running job to stop: async jobs are cancelled, sync jobs see ctx.cancelled."""
        run.ctx._request_cancel()
        if run.atask is not None and self.loop is not None:
            self.loop.call_soon_threadsafe(run.atask.cancel)

    def interrupt_sync(self, run: Run, exc_type: type[BaseException]) -> None:
        """Raise ``exc_type`` inside the thread running ``run`` at its next bytecode.

        A thread blocked in C code (sleep, socket read) sees it only when that call returns.
        """
        with run.lock:
            if not run.in_user_code or run.thread_id is None:
                return
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(run.thread_id),
                                                       ctypes.py_object(exc_type))
