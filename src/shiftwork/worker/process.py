"""The process executor: a queue whose jobs each run in a child process.

For work that must be stoppable for real: on timeout or cancel the child is killed
(SIGKILL), which a thread never can be. The child imports the app afresh (``spawn``,
so no locks or connections are inherited), runs the task and reports a JSON result
or the error's description over a pipe. Costs a process start per job (~0.1-0.3 s).

A job with a memory ceiling (``memory_limit``: the call's, the task's or the queue's) runs
here whatever its queue: the child caps its own data segment (``RLIMIT_DATA``, so an
allocation past the ceiling raises MemoryError there) and the parent samples the child's
resident size every 50 ms and kills it past the ceiling (memory the rlimit does not
count: shared mappings, or a platform that does not enforce it). Either way the attempt
fails with MemoryLimitExceeded; every report carries the child's peak resident size.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os

# Real time, not the runtime's clock: deadlines of a real child process.
import time
import traceback
from dataclasses import replace
from datetime import datetime
from multiprocessing.connection import Connection
from typing import Any

from shiftwork.core.control import RetryIn, Snooze
from shiftwork.core.errors import (
    JobCancelled,
    JobPaused,
    MemoryLimitExceeded,
    UnknownTaskError,
    unknown_task_message,
)
from shiftwork.core.memory import exceeded_message
from shiftwork.core.payload import encode_json, storable_text
from shiftwork.core.states import JobState
from shiftwork.model.outcome import Outcome
from shiftwork.runtime import Runtime
from shiftwork.worker.decide import Decide
from shiftwork.worker.decide import outcome as decided
from shiftwork.worker.parent_death import die_with_parent
from shiftwork.worker.rss import can_sample, limit_data_segment, own_peak, sample
from shiftwork.worker.run import Run

_SPAWN = multiprocessing.get_context("spawn")


#: How often the parent samples a limited child's resident size (seconds).
WATCH_INTERVAL = 0.05


def _child_main(import_path: str, task_name: str, job: dict[str, Any], conn: Connection,
                memory_limit: int | None = None, parent_pid: int | None = None) -> None:
    if parent_pid is not None:
        die_with_parent(parent_pid)
    if memory_limit is not None:  # first, so the app's import counts too
        limit_data_segment(memory_limit)
    _run_child(import_path, task_name, job, _Reporter(conn), memory_limit)


class _Reporter:
    """Sends the child's one report, its peak resident size with it (the report's last
    element: an "ok" report is ("ok", result, items, peak), the others (kind, detail, peak))."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def send(self, report: tuple[Any, ...]) -> None:
        self.conn.send((*report, own_peak()))

    def close(self) -> None:
        self.conn.close()


def _run_child(import_path: str, task_name: str, job: dict[str, Any], conn: _Reporter,
               memory_limit: int | None) -> None:
    from shiftwork.jobs.context import JobContext
    from shiftwork.observe.tracing import execution_span
    from shiftwork.worker.importer import import_attribute

    rt: Runtime | None = None
    ctx = None
    try:
        # The child's own App (its Runtime: what the job runs on); looked for by what it
        # holds, as the App stands above the worker's internals.
        rt = import_attribute(import_path, _holds_runtime).runtime
        rt.import_path = import_path
        task = rt.registry.get_task(task_name)
        args = list(job["args"])
        if task.takes_context:
            ctx = JobContext(rt, job["id"], task_name, job["queue"], job["attempt"],
                             job["max_attempts"], last_checkpoint=job["checkpoint"],
                             meta=job["meta"], uncounted=job["uncounted"])
            args.insert(0, ctx)
        with execution_span(job):
            result = task.fn(*args, **job["kwargs"])
            if asyncio.iscoroutine(result):
                result = asyncio.run(result)
        if ctx is not None:
            ctx.flush_progress()
        conn.send(("ok", encode_json(result, f"{task_name}: return value",
                                           rt.settings.limit("max_result_bytes"))
                   if result is not None else None, ctx.items if ctx is not None else None))
    except JobCancelled as exc:  # seen at a checkpoint or heartbeat in the child
        conn.send(("cancelled", str(exc)))
    except JobPaused as exc:  # the checkpoint already gave the job back to its queue
        conn.send(("paused", str(exc)))
    except MemoryError as exc:
        if memory_limit is None:
            _send_error(conn, rt, task_name, job, exc)
        else:  # the rlimit refused an allocation: the ceiling, not a bug of the task
            conn.send(("memory", None))
    except Snooze as exc:
        conn.send(("snooze", {"seconds": exc.seconds,
                              "until": exc.until.isoformat() if exc.until else None}))
    except BaseException as exc:
        _send_error(conn, rt, task_name, job, exc)
    finally:
        conn.close()


def _holds_runtime(value: object) -> bool:
    return isinstance(getattr(value, "runtime", None), Runtime)


def _send_error(conn: _Reporter, rt: Runtime | None, task_name: str, job: dict[str, Any],
                exc: BaseException) -> None:
    tasks = rt.registry.tasks if rt is not None else {}
    policy = tasks[task_name].options.retry if task_name in tasks else None
    conn.send(("error", {
        "type": f"{type(exc).__module__}.{type(exc).__qualname__}".removeprefix("builtins."),
        "message": unknown_task_message(task_name) if isinstance(exc, UnknownTaskError)
        else storable_text(str(exc), 2000),
        "traceback": storable_text("".join(traceback.format_exception(exc))[-8000:], 8000),
        "retryable": policy.retryable(exc) if policy else True,
        "delay": policy.delay(job["attempt"], exc) if policy else 1.0,
        "kind": "retry_requested" if isinstance(exc, RetryIn) else "exception",
    }))


def run_in_process(decide: Decide, import_path: str, run: Run) -> None:
    """Body of a pool thread supervising one child process."""
    job = run.job
    if not run.begin():
        return  # handed back or cancelled before it started
    if run.ctx.cancelled and not run.task.handles_cancel:
        run.finalize(decide.error(
            run, JobCancelled(f"job {job.id} was cancelled before it started")))
        return
    limit = run.memory_limit
    parent, child = _SPAWN.Pipe(duplex=False)
    proc = _SPAWN.Process(target=_child_main, name=f"shiftwork-job-{job.id}", daemon=True, args=(
        import_path, job.task,
        {"id": job.id, "task": job.task, "queue": job.queue, "attempt": job.attempt,
         "max_attempts": job.max_attempts, "uncounted": job.uncounted, "args": job.args,
         "kwargs": job.kwargs,
         "checkpoint": job.checkpoint, "meta": job.meta}, child, limit, os.getpid()))
    proc.start()
    child.close()
    run.process = proc
    timeout = run.deadline - time.monotonic() if run.deadline is not None else None
    report = None
    peak = 0  # the child's peak resident size: sampled here, and reported by the child
    watched = limit is not None and proc.pid is not None and can_sample()
    over = False  # the watch saw it past its ceiling
    # Wait for a report, a timeout, a cancel request, the ceiling, or the child dying.
    deadline = time.monotonic() + timeout if timeout is not None else None
    step = WATCH_INTERVAL if watched else 0.1
    while report is None:
        if run.ctx.cancelled or run.finished:
            break
        if watched:
            seen = sample(proc.pid)  # type: ignore[arg-type]
            if seen is not None:
                peak = max(peak, seen[1])
                if limit is not None and seen[0] > limit:
                    over = True
                    break
        wait = step if deadline is None else min(step, max(deadline - time.monotonic(), 0))
        if parent.poll(wait):
            try:
                report = parent.recv()
            except EOFError:
                break
        elif not proc.is_alive() or (deadline is not None and time.monotonic() >= deadline):
            break
    if proc.is_alive():
        proc.kill()
    proc.join(5)
    parent.close()
    if report is not None and report[-1]:
        peak = max(peak, report[-1])
    attempt = job.attempt
    if over or (report is not None and report[0] == "memory"):
        outcome = decide.error(run, MemoryLimitExceeded(exceeded_message(
            job.id, limit or 0, peak or None, refused=not over)), kind="memory_limit")
    elif report is not None and report[0] == "ok":
        run.ctx.items = report[2]  # what the child's ctx.processed counted
        outcome = decided(run, JobState.SUCCEEDED, result_json=report[1])
    elif report is not None and report[0] == "cancelled":
        run.ctx._request_cancel()
        outcome = decide.error(run, JobCancelled(report[1]))
    elif report is not None and report[0] == "paused":
        outcome = decide.error(run, JobPaused(report[1]))
    elif report is not None and report[0] == "snooze":
        until = report[1]["until"]
        outcome = decide.snooze(run, Snooze(
            report[1]["seconds"], until=datetime.fromisoformat(until) if until else None))
    elif report is not None:
        info = report[1]
        record = {"attempt": attempt, "kind": info["kind"], "type": info["type"],
                  "message": info["message"], "traceback": info["traceback"]}
        outcome = decide.failure(run, record, info["retryable"], info["delay"])
    elif run.ctx.cancelled:
        outcome = decide.error(run, JobCancelled(f"job {job.id} was cancelled; "
                                                               "its process was killed"))
    elif deadline is not None and time.monotonic() >= deadline:
        outcome = decide.error(run, TimeoutError(
            f"timed out after {run.task.options.timeout}s; its process was killed"),
            kind="timeout")
    else:
        outcome = decide.error(run, RuntimeError(
            f"job process exited with code {proc.exitcode} before reporting"), kind="crash")
    run.finalize(with_peak(outcome, peak) if limit is not None and peak else outcome)


def with_peak(outcome: Outcome, peak: int) -> Outcome:
    """The outcome of a limited attempt, its peak resident size recorded (in bytes): on
    the job (``peak_rss``, the last attempt's) and in its error record, if it failed."""
    error = {**outcome.error, "peak_rss": peak} if outcome.error is not None else None
    return replace(outcome, peak_rss=peak, error=error)
