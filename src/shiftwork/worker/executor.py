"""Run one job attempt and decide its outcome.

Sync functions run on the queue's thread pool, async ones on the worker's event
loop. The outcome is a value (see :mod:`shiftwork.model.outcome`); writing it is the
completer's job. A run is *finalized* exactly once: by its own return, or by
the watchdog (timeout) or shutdown, whichever comes first; the loser's result
is discarded.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import sys
import threading
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

from shiftwork.core.control import RetryIn
from shiftwork.core.errors import ConfigurationError, JobCancelled
from shiftwork.observe.tracing import execution_span, recording
from shiftwork.worker.batching import call_batch, call_batch_async
from shiftwork.worker.decide import Decide
from shiftwork.worker.job_logs import capturing, install
from shiftwork.worker.process import run_in_process
from shiftwork.worker.run import JobTimeout, Run, flush_logs, flush_progress

if TYPE_CHECKING:
    from shiftwork.runtime import Runtime
    from shiftwork.worker.pool import ThreadPool

log = logging.getLogger("shiftwork.worker.executor")

_EAGER = sys.version_info >= (3, 12)  # asyncio.Task(..., eager_start=True)


class Executor:
    def __init__(self, rt: Runtime, loop: asyncio.AbstractEventLoop | None,
                 concurrency: dict[str, int] | None = None) -> None:
        self.rt = rt
        self.decide = Decide(rt.settings, rt.clock)
        self.loop = loop
        # Async jobs run on one loop, not a pool of threads: a semaphore per queue keeps
        # them to the queue's concurrency when the producer claims ahead.
        self.slots = {q: asyncio.Semaphore(n) for q, n in (concurrency or {}).items()}
        # Async runs started from other threads wait here for the loop: one wake-up of the
        # loop per claim, not one per job (run_coroutine_threadsafe per job cost more than
        # the job: an async drain ran at 2/3 of the sync one).
        self._to_start: list[Run] = []
        self._to_start_lock = threading.Lock()
        self._tasks: set[asyncio.Task[None]] = set()  # the loop keeps only weak references
        install()  # per-job logs: what a task logs while it runs is kept with its job

    # -- running ------------------------------------------------------------------

    def call_args(self, run: Run) -> tuple[list[Any], dict[str, Any]]:
        args = list(run.job.args)
        if run.task.takes_context:
            args.insert(0, run.ctx)
        return args, dict(run.job.kwargs)

    def run_sync(self, run: Run) -> None:
        """Body of a pool thread for one job."""
        if run.task.options.batch is not None:  # run alone (drain, inline): a batch of one
            call_batch(self.decide, [run])
            return
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
                    # cancelled while it waited for a thread (a workflow runs: it compensates)
                    if run.ctx.cancelled and not run.task.handles_cancel:
                        raise JobCancelled(f"job {run.job.id} was cancelled before it started")
                    with capturing(run.logs) if run.logs is not None else nullcontext():
                        if recording():
                            with execution_span(run.job):
                                result = run.task.fn(*args, **kwargs)
                        else:  # no span: the context manager alone costs more than a no-op
                            result = run.task.fn(*args, **kwargs)
                finally:
                    with run.lock:
                        run.in_user_code = False
                    flush_progress(run)
                    flush_logs(run)
                outcome = self.decide.success(run, result)
            except JobTimeout as exc:
                outcome = self.decide.error(run, TimeoutError(
                    f"timed out after {run.task.options.timeout}s"), kind="timeout")
                del exc
            except RetryIn as exc:
                outcome = self.decide.error(run, exc, kind="retry_requested")
            except BaseException as exc:
                outcome = self.decide.error(run, exc)
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
        if run.task.options.batch is not None:  # run alone (drain): a batch of one
            await call_batch_async(self.decide, [run])
            return
        run.atask = asyncio.current_task()
        if not run.begin():  # handed back or cancelled before it started
            return
        args, kwargs = self.call_args(run)
        timeout = run.timeout
        try:
            try:
                if run.ctx.cancelled and not run.task.handles_cancel:
                    raise JobCancelled(f"job {run.job.id} was cancelled before it started")
                with capturing(run.logs) if run.logs is not None else nullcontext():
                    if recording():
                        with execution_span(run.job):
                            result = await asyncio.wait_for(run.task.fn(*args, **kwargs),
                                                            timeout)
                    elif timeout is None:  # wait_for would add a timeout scope per job
                        result = await run.task.fn(*args, **kwargs)
                    else:
                        result = await asyncio.wait_for(run.task.fn(*args, **kwargs), timeout)
            finally:
                if run.ctx._pending_progress is not None:
                    await asyncio.to_thread(flush_progress, run)
                if run.logs is not None and run.logs.has_pending():
                    await asyncio.to_thread(flush_logs, run)
            outcome = self.decide.success(run, result)
        except TimeoutError as exc:
            outcome = self.decide.error(run, TimeoutError(
                f"timed out after {timeout}s") if not str(exc) else exc, kind="timeout")
        except RetryIn as exc:
            outcome = self.decide.error(run, exc, kind="retry_requested")
        except asyncio.CancelledError as exc:
            if not run.ctx.cancelled:
                run.finalize(self.decide.error(run, exc))
                raise
            outcome = self.decide.error(run, exc)
        except BaseException as exc:
            outcome = self.decide.error(run, exc)
        run.finalize(outcome)

    def start_batch(self, runs: list[Run], pool: ThreadPool) -> None:
        """One call of a batch task for ``runs``: on a thread of the queue's pool, or on
        the event loop (at most the queue's concurrency of calls at once)."""
        if runs[0].task.is_async:
            assert self.loop is not None, "async task without an event loop"
            slots = self.slots.get(runs[0].job.queue)

            async def call() -> None:
                if slots is None:
                    await call_batch_async(self.decide, runs)
                    return
                async with slots:
                    await call_batch_async(self.decide, runs)

            asyncio.run_coroutine_threadsafe(call(), self.loop)
        else:
            pool.submit(lambda: call_batch(self.decide, runs))

    def start(self, run: Run, pool: ThreadPool, in_process: bool = False) -> None:
        if in_process:
            run.in_process = True
            import_path = self.rt.import_path
            if import_path is None:  # a call's own ceiling, on a worker started without one
                run.finalize(self.decide.error(run, ConfigurationError(
                    "this job runs in a child process (a memory ceiling or a :process "
                    "queue), which needs the app's import path: start the worker with "
                    "`shiftwork worker module:attr` or set app.import_path")))
                return
            pool.submit(lambda: run_in_process(self.decide, import_path, run))
        elif run.task.is_async:
            assert self.loop is not None, "async task without an event loop"
            with self._to_start_lock:
                self._to_start.append(run)
                first = len(self._to_start) == 1
            if first:  # the loop takes every run that arrives before it gets to them
                self.loop.call_soon_threadsafe(self._start_waiting)
        else:
            pool.submit(lambda: self.run_sync(run))

    def _start_waiting(self) -> None:
        """On the loop: a task for each async run handed over since the last call."""
        with self._to_start_lock:
            runs, self._to_start = self._to_start, []
        assert self.loop is not None
        for run in runs:
            coro = self.run_async(run, self.slots.get(run.job.queue))
            # Started at once (3.12+): a job that never waits finishes here, without a turn
            # of the loop; it waits for its queue's slot like any other.
            if _EAGER:
                task = asyncio.Task(coro, loop=self.loop, eager_start=True)  # type: ignore[call-arg]
            else:
                task = self.loop.create_task(coro)
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

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
