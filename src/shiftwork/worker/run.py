"""One claimed job's attempt as the worker tracks it: its context, timing and the one
delivery of its outcome; and how an exception is recorded."""

from __future__ import annotations

import asyncio
import logging
import threading

# Real time, not the runtime's clock: an attempt's duration and timeout (as asyncio's).
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from shiftwork.core.errors import JobCancelled, LeaseLost
from shiftwork.core.payload import storable_text
from shiftwork.jobs.context import JobContext
from shiftwork.jobs.sealing import seal_outcome, task_keys
from shiftwork.model.outcome import Outcome
from shiftwork.model.records import ClaimedJob
from shiftwork.worker.job_logs import JobLog, new_log, write_logs
from shiftwork.workflow.children import PARENT_META, report_outcome

if TYPE_CHECKING:
    from shiftwork.jobs.task import Task
    from shiftwork.runtime import Runtime

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
    in_process: bool = False  # runs in a child process (a :process queue, or a ceiling)
    memory_limit: int | None = None  # bytes: the job's ceiling (its call's, task's, queue's)
    lock: threading.Lock = field(default_factory=threading.Lock)
    logs: JobLog | None = None  # what the attempt logs (worker/job_logs.py); set by of()

    @classmethod
    def of(cls, rt: Runtime, job: ClaimedJob, task: Task[Any, Any],
           on_done: Callable[[Run, Outcome], None],
           on_begin: Callable[[Run], None] | None = None) -> Run:
        """The run of a claimed job: its context, and its timeout (the job's, else the task's)."""
        ctx = JobContext(rt, job.id, job.task, job.queue, job.attempt, job.max_attempts,
                         last_checkpoint=job.checkpoint, meta=job.meta,
                         uncounted=job.uncounted)
        return cls(job=job, task=task, ctx=ctx, started=time.monotonic(),
                   timeout=task.options.timeout if job.timeout is None else job.timeout,
                   on_done=on_done, on_begin=on_begin,
                   logs=new_log(rt, job.id, job.attempt))

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
        if PARENT_META in self.ctx.meta:  # a workflow's call: its parent waits to hear
            try:
                report_outcome(self.ctx.runtime, self.task, self.ctx.meta, outcome)
            except Exception:
                log.exception("job %s: report to its parent workflow failed", self.job.id)
        keys = task_keys(self.ctx.runtime.keys, self.task.options.encrypt)
        if keys is not None:  # sealed for the row (its parent workflow heard it clear)
            outcome = seal_outcome(keys, outcome)
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


def flush_logs(run: Run) -> None:
    """The attempt ended: write what it logged and was not written yet."""
    if run.logs is not None and run.logs.has_pending():
        write_logs(run.ctx.runtime, run.logs, final=True)


def flush_progress(run: Run) -> None:
    """The attempt ended: write progress that was still throttled, if any."""
    if run.ctx._pending_progress is None or run.finished:
        return
    try:
        run.ctx.flush_progress()
    except (Exception, LeaseLost, JobCancelled):
        log.debug("job %s: final progress not written", run.job.id, exc_info=True)
