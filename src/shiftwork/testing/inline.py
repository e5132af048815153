"""The inline mode: a job runs at enqueue, in the caller's thread, until it is final.

It is the worker's path without the worker: the job is inserted (arguments validated and
stored as JSON), claimed, run by the executor with its context, its outcome decided by the
same rules (``worker/outcomes.py``) and written; a retry is made due at once (no sleep)
and run again, until the job succeeds, is dead or cancelled, or suspends itself (a
snooze, a workflow sleep). Delayed jobs and jobs enqueued inside a caller's transaction
(``conn=...``) wait, as they would for a worker: run them with :func:`drain`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

from ..app import App
from ..records import EnqueueResult
from ..states import JobState
from ..worker.executor import Executor
from .drain import DrainResult, app_queues, claim_due, run_attempt


@contextmanager
def inline(app: App) -> Iterator[DrainResult]:
    """Run every job ``app`` enqueues inside the block at once, in this thread.

    >>> with inline(app) as ran:
    ...     signup(user_id=7)          # enqueues send_welcome(7), which runs now
    >>> assert ran.succeeded == 1

    Yields the :class:`DrainResult` the block's jobs add to, one entry per attempt.
    """
    ran = DrainResult()

    def hook(results: list[EnqueueResult], queues: set[str] | None) -> None:
        run_until_final(app, {r.id for r in results if r.created},
                        sorted(queues) if queues else app_queues(app), ran)

    app.enqueue_hooks.append(hook)
    try:
        yield ran
    finally:
        app.enqueue_hooks.remove(hook)


def run_until_final(app: App, ids: set[int], queues: list[str], into: DrainResult) -> None:
    """Claim and run the due jobs of ``queues`` until every job of ``ids`` has stopped:
    final, suspended, or not due (delayed). Retries are due at once."""
    executor = Executor(app, loop=None)
    pending = set(ids)
    while pending:
        claimed = claim_due(app, queues)
        if not claimed:
            return  # what is left is not due: delayed, or held by a limit
        for job in claimed:
            outcomes = [replace(o, run_at=app.clock.now())
                        if o.state is JobState.RETRYING else o
                        for o in run_attempt(app, executor, job)]
            app.store.jobs_complete_many(outcomes)
            for outcome in outcomes:
                into.add(outcome)
                if outcome.state is not JobState.RETRYING:  # final, or suspended
                    pending.discard(outcome.job_id)
