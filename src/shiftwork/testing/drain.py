"""Run due jobs in the test's own thread (``drain``), and look at what was enqueued."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from shiftwork.composition.compose import with_input
from shiftwork.core.errors import EncryptionKeyError
from shiftwork.core.states import WAITING, JobState
from shiftwork.flow.claiming import claim
from shiftwork.jobs.sealing import key_problem, open_claimed, open_job
from shiftwork.jobs.task import Task
from shiftwork.model.outcome import Outcome
from shiftwork.model.records import ClaimedJob, Job
from shiftwork.runtime import HasRuntime, Runtime, runtime_of
from shiftwork.worker.executor import Executor
from shiftwork.worker.run import Run

INLINE_WORKER = "inline"  # the worker id of jobs run by drain and the inline mode
INLINE_LEASE = 3600.0


@dataclass
class DrainResult:
    """What a :func:`drain` ran, counted by how each attempt ended."""

    succeeded: int = 0
    retrying: int = 0
    dead: int = 0
    cancelled: int = 0
    snoozed: int = 0  # suspended until later (Snooze, workflow sleeps and waits)
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def ran(self) -> int:
        """How many attempts ran."""
        return len(self.outcomes)

    def add(self, outcome: Outcome) -> None:
        """Count one attempt's outcome."""
        self.outcomes.append(outcome)
        name = "snoozed" if outcome.state is JobState.SCHEDULED else outcome.state.value
        setattr(self, name, getattr(self, name) + 1)


def drain(app: HasRuntime | Runtime, queues: list[str] | None = None, max_jobs: int = 10_000
          ) -> DrainResult:
    """Run every due job of ``queues`` (default: all the app's queues) in this thread.

    Jobs go through the real storage and the real retry decisions; a job that
    fails is left ``retrying`` with its backoff (advance a FakeClock to run it again).
    """
    rt = runtime_of(app)
    names = queues or app_queues(rt)
    executor = Executor(rt, loop=None)
    result = DrainResult()
    while result.ran < max_jobs:
        claimed = claim_due(rt, names, min(100, max_jobs - result.ran))
        if not claimed:
            return result
        for job in claimed:
            outcomes = run_attempt(rt, executor, job)
            rt.store.jobs.complete_many(outcomes)
            for outcome in outcomes:
                result.add(outcome)
    return result


def app_queues(rt: Runtime) -> list[str]:
    """The queues of the app's tasks and declared queues."""
    registry = rt.registry
    return sorted({t.options.queue for t in registry.tasks.values()}
                  | set(registry.queue_options))


def claim_due(rt: Runtime, queues: list[str], limit: int = 100) -> list[ClaimedJob]:
    """Claim the due jobs of ``queues`` (up to ``limit`` each), as a worker's producer
    would: within the tasks' concurrency limits and the queues' flow control."""
    return [job for q in queues
            for job in claim(rt.store, q, limit, INLINE_WORKER, INLINE_LEASE,
                                            rt.registry.concurrency_limits(q),
                                            rt.registry.claim_flow(q) or None)]


def run_attempt(rt: Runtime, executor: Executor, job: ClaimedJob) -> list[Outcome]:
    """Run one claimed attempt in this thread, as the worker's executor does; its
    outcome is decided (not yet written)."""
    done: list[Outcome] = []
    task = rt.registry.get_task(job.task)
    try:
        job = open_claimed(rt.keys, job)  # an encrypted task's arguments and checkpoint
        job = with_input(rt.store, job, rt.keys)  # a chain link's or a group callback's input
    except EncryptionKeyError as exc:  # as a worker: back for later, not counted
        return [key_problem(rt.clock.now(), job, exc)]
    run = Run.of(rt, job, task, lambda _run, outcome: done.append(outcome))
    if task.is_async:
        asyncio.run(executor.run_async(run))
    else:
        executor.run_sync(run)
    return done


def enqueued(app: HasRuntime | Runtime, task: Task[Any, Any] | str | None = None,
             queue: str | None = None) -> list[Job]:
    """Jobs waiting to run (oldest first), optionally of one task or queue."""
    name = task.name if isinstance(task, Task) else task
    rt = runtime_of(app)
    jobs = rt.store.jobs.list(state=None, queue=queue, task=name, limit=10_000)
    return sorted((open_job(rt.keys, j) for j in jobs if j.state in WAITING),  # clear args
                  key=lambda j: j.id)


def job_states(app: HasRuntime | Runtime) -> dict[JobState, int]:
    """How many jobs are in each state (for assertions in tests)."""
    counts: dict[JobState, int] = {}
    for job in runtime_of(app).store.jobs.list(state=None, queue=None, task=None,
                                               limit=100_000):
        counts[job.state] = counts.get(job.state, 0) + 1
    return counts
