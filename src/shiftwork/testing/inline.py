"""The inline mode: a job runs at enqueue, in the caller's thread, until it is final.

Two entry points, one mechanism (:func:`install`): the :func:`inline` context manager for a
block, and ``App(..., testing="inline")`` for an App whose every enqueue runs inline.

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

from shiftwork.core.states import JobState
from shiftwork.model.records import EnqueueResult
from shiftwork.runtime import HasRuntime, Runtime, runtime_of
from shiftwork.testing.drain import DrainResult, app_queues, claim_due, run_attempt
from shiftwork.worker.executor import Executor


@contextmanager
def inline(app: HasRuntime | Runtime) -> Iterator[DrainResult]:
    """Run every job ``app`` enqueues inside the block at once, in this thread.

    >>> with inline(app) as ran:
    ...     signup(user_id=7)          # enqueues send_welcome(7), which runs now
    >>> assert ran.succeeded == 1

    Yields the :class:`DrainResult` the block's jobs add to, one entry per attempt.
    """
    rt = runtime_of(app)
    ran = DrainResult()
    hook = install(rt, ran)
    try:
        yield ran
    finally:
        # By identity: DrainResults with equal counts compare equal.
        hook.sinks[:] = [s for s in hook.sinks if s is not ran]
        if not hook.sinks:
            rt.registry.enqueue_hooks.remove(hook)


class InlineHook:
    """The enqueue hook of the inline mode: runs the new jobs, counting each attempt into
    every sink (the App's own with ``testing="inline"``, and each open ``inline()`` block)."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.sinks: list[DrainResult] = []

    def __call__(self, results: list[EnqueueResult], queues: set[str] | None) -> None:
        into = DrainResult()
        run_until_final(self.rt, {r.id for r in results if r.created},
                        sorted(queues) if queues else app_queues(self.rt), into)
        for sink in self.sinks:
            for outcome in into.outcomes:
                sink.add(outcome)


def install(rt: Runtime, ran: DrainResult) -> InlineHook:
    """Make every later enqueue on ``app`` (outside a caller's transaction) run its jobs
    at once, counting each attempt into ``ran``; one hook per App, however many callers."""
    hook = next((h for h in rt.registry.enqueue_hooks if isinstance(h, InlineHook)), None)
    if hook is None:
        hook = InlineHook(rt)
        rt.registry.enqueue_hooks.append(hook)
    hook.sinks.append(ran)
    return hook


def run_until_final(rt: Runtime, ids: set[int], queues: list[str], into: DrainResult) -> None:
    """Claim and run the due jobs of ``queues`` until every job of ``ids`` has stopped:
    final, suspended, or not due (delayed). Retries are due at once."""
    executor = Executor(rt, loop=None)
    pending = set(ids)
    while pending:
        claimed = claim_due(rt, queues)
        if not claimed:
            return  # what is left is not due: delayed, or held by a limit
        for job in claimed:
            outcomes = [replace(o, run_at=rt.clock.now())
                        if o.state is JobState.RETRYING else o
                        for o in run_attempt(rt, executor, job)]
            rt.store.jobs.complete_many(outcomes)
            for outcome in outcomes:
                into.add(outcome)
                if outcome.state is not JobState.RETRYING:  # final, or suspended
                    pending.discard(outcome.job_id)
