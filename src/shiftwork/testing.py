"""Tools for users' own tests: run jobs inline, look at what was enqueued.

>>> from shiftwork.testing import drain, enqueued
>>> signup(user_id=7)                       # your code enqueues a job
>>> assert [j.args for j in enqueued(app, send_welcome)] == [[7]]
>>> drain(app)                              # run everything due, here, now
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from .app import App
from .job import Job
from .outcome import Outcome
from .states import WAITING, JobState
from .task import Task
from .worker.executor import Executor
from .worker.run import Run

__all__ = ["DrainResult", "drain", "enqueued"]


@dataclass
class DrainResult:
    succeeded: int = 0
    retrying: int = 0
    dead: int = 0
    cancelled: int = 0
    snoozed: int = 0  # suspended until later (Snooze, workflow sleeps and waits)
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def ran(self) -> int:
        return len(self.outcomes)


def drain(app: App, queues: list[str] | None = None, max_jobs: int = 10_000) -> DrainResult:
    """Run every due job of ``queues`` (default: all the app's queues) in this thread.

    Jobs go through the real storage and the real retry decisions; a job that
    fails is left ``retrying`` with its backoff (advance a FakeClock to run it again).
    """
    names = queues or sorted({t.options.queue for t in app.tasks.values()})
    executor = Executor(app, loop=None)
    result = DrainResult()
    done: list[Outcome] = []
    while result.ran < max_jobs:
        claimed = [job for q in names
                   for job in app.store.jobs_claim(
                       q, min(100, max_jobs - result.ran), "inline", 3600.0,
                       app.concurrency_limits(q), app.claim_flow(q) or None)]
        if not claimed:
            return result
        for job in claimed:
            done.clear()
            task = app.get_task(job.task)
            run = Run.of(app, job, task, _collect(done))
            if task.is_async:
                asyncio.run(executor.run_async(run))
            else:
                executor.run_sync(run)
            app.store.jobs_complete_many(done)
            for outcome in done:
                result.outcomes.append(outcome)
                field_name = "snoozed" if outcome.state is JobState.SCHEDULED \
                    else outcome.state.value
                setattr(result, field_name, getattr(result, field_name) + 1)
    return result


def _collect(into: list[Outcome]) -> Any:
    return lambda _run, outcome: into.append(outcome)


def enqueued(app: App, task: Task[Any, Any] | str | None = None,
             queue: str | None = None) -> list[Job]:
    """Jobs waiting to run (oldest first), optionally of one task or queue."""
    name = task.name if isinstance(task, Task) else task
    jobs = app.list_jobs(task=name, queue=queue, limit=10_000)
    return sorted((j for j in jobs if j.state in WAITING), key=lambda j: j.id)


def job_states(app: App) -> dict[JobState, int]:
    """How many jobs are in each state (for assertions in tests)."""
    counts: dict[JobState, int] = {}
    for job in app.list_jobs(limit=100_000):
        counts[job.state] = counts.get(job.state, 0) + 1
    return counts
