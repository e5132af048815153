"""The process executor: a queue whose jobs each run in a child process.

For work that must be stoppable for real: on timeout or cancel the child is killed
(SIGKILL), which a thread never can be. The child imports the app afresh (``spawn``,
so no locks or connections are inherited), runs the task and reports a JSON result
or the error's description over a pipe. Costs a process start per job (~0.1-0.3 s).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import time
import traceback
from datetime import datetime
from multiprocessing.connection import Connection
from typing import Any

from ..errors import (
    JobCancelled,
    JobPaused,
    RetryIn,
    Snooze,
    UnknownTaskError,
    unknown_task_message,
)
from ..payload import encode_json, storable_text
from ..states import JobState
from . import outcomes
from .outcomes import Decide
from .run import Run

_SPAWN = multiprocessing.get_context("spawn")


def _child_main(import_path: str, task_name: str, job: dict[str, Any], conn: Connection) -> None:
    from ..context import JobContext
    from ..loader import load_app
    from ..observe.tracing import execution_span

    app = None
    ctx = None
    try:
        app = load_app(import_path)
        task = app.get_task(task_name)
        args = list(job["args"])
        if task.takes_context:
            ctx = JobContext(app, job["id"], task_name, job["queue"], job["attempt"],
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
                                           app.settings.limit("max_result_bytes"))
                   if result is not None else None, ctx.items if ctx is not None else None))
    except JobCancelled as exc:  # seen at a checkpoint or heartbeat in the child
        conn.send(("cancelled", str(exc)))
    except JobPaused as exc:  # the checkpoint already gave the job back to its queue
        conn.send(("paused", str(exc)))
    except Snooze as exc:
        conn.send(("snooze", {"seconds": exc.seconds,
                              "until": exc.until.isoformat() if exc.until else None}))
    except BaseException as exc:
        policy = app.tasks[task_name].options.retry if app and task_name in app.tasks else None
        conn.send(("error", {
            "type": f"{type(exc).__module__}.{type(exc).__qualname__}".removeprefix("builtins."),
            "message": unknown_task_message(task_name) if isinstance(exc, UnknownTaskError)
            else storable_text(str(exc), 2000),
            "traceback": storable_text("".join(traceback.format_exception(exc))[-8000:], 8000),
            "retryable": policy.retryable(exc) if policy else True,
            "delay": policy.delay(job["attempt"], exc) if policy else 1.0,
            "kind": "retry_requested" if isinstance(exc, RetryIn) else "exception",
        }))
    finally:
        conn.close()


def run_in_process(decide: Decide, import_path: str, run: Run) -> None:
    """Body of a pool thread supervising one child process."""
    job = run.job
    if not run.begin():
        return  # handed back or cancelled before it started
    if run.ctx.cancelled and not run.task.handles_cancel:
        run.finalize(decide.error(
            run, JobCancelled(f"job {job.id} was cancelled before it started")))
        return
    parent, child = _SPAWN.Pipe(duplex=False)
    proc = _SPAWN.Process(target=_child_main, name=f"shiftwork-job-{job.id}", daemon=True, args=(
        import_path, job.task,
        {"id": job.id, "task": job.task, "queue": job.queue, "attempt": job.attempt,
         "max_attempts": job.max_attempts, "uncounted": job.uncounted, "args": job.args,
         "kwargs": job.kwargs,
         "checkpoint": job.checkpoint, "meta": job.meta}, child))
    proc.start()
    child.close()
    run.process = proc
    timeout = run.deadline - time.monotonic() if run.deadline is not None else None
    report = None
    # Wait for a report, a timeout, a cancel request, or the child dying.
    deadline = time.monotonic() + timeout if timeout is not None else None
    while report is None:
        if run.ctx.cancelled or run.finished:
            break
        wait = 0.1 if deadline is None else min(0.1, max(deadline - time.monotonic(), 0))
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
    attempt = job.attempt
    if report is not None and report[0] == "ok":
        run.ctx.items = report[2]  # what the child's ctx.processed counted
        outcome = outcomes.outcome(run, JobState.SUCCEEDED, result_json=report[1])
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
    run.finalize(outcome)
