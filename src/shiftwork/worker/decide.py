"""How an attempt ends, decided as a value before anything is written.

One set of rules for the three ways a job runs (a pool thread, the event loop, a child
process): success, a snooze, a pause, a cancel, a retry after a backoff, or dead.
"""

from __future__ import annotations

import asyncio
import json

# Real time, not the runtime's clock: an attempt's duration, measured for events and metrics.
import time
from typing import Any

from shiftwork.core.bounds import later
from shiftwork.core.clock import Clock
from shiftwork.core.control import Snooze
from shiftwork.core.errors import JobCancelled, JobPaused, PayloadTooLargeError
from shiftwork.core.payload import encode_json
from shiftwork.core.settings import Settings
from shiftwork.core.states import JobState
from shiftwork.model.outcome import Outcome
from shiftwork.worker.run import Run, error_record


def outcome(run: Run, state: JobState, **kw: Any) -> Outcome:
    """The outcome ``state`` for ``run``, timed from when its attempt began."""
    return Outcome(job_id=run.job.id, attempt=run.job.attempt, state=state,
                   duration=time.monotonic() - run.started, task=run.job.task,
                   queue=run.job.queue, items=run.ctx.items, **kw)


class Decide:
    """The rules, with the settings and the clock they need (no I/O)."""

    def __init__(self, settings: Settings, clock: Clock) -> None:
        self.settings = settings
        self.clock = clock

    def success(self, run: Run, result: Any) -> Outcome:
        if not run.task.options.store_result:  # the task opted out of keeping it
            return outcome(run, JobState.SUCCEEDED)
        try:
            result_json = encode_json(result, f"{run.job.task}: return value",
                                      self.settings.limit("max_result_bytes")) \
                if result is not None else None
        except PayloadTooLargeError as exc:  # kept out of the database: the attempt fails
            return self.error(run, exc)
        except Exception:
            result_json = json.dumps(repr(result)[:2000])
        return outcome(run, JobState.SUCCEEDED, result_json=result_json)

    def snooze(self, run: Run, snooze: Snooze) -> Outcome:
        run_at = snooze.until or later(self.clock.now(), snooze.seconds)
        return outcome(run, JobState.SCHEDULED, run_at=run_at)

    def error(self, run: Run, exc: BaseException, kind: str = "exception") -> Outcome:
        if isinstance(exc, Snooze):
            return self.snooze(run, exc)
        job = run.job
        record = error_record(exc, job.attempt, kind)
        if isinstance(exc, JobPaused):  # the checkpoint already gave the job back
            return outcome(run, JobState.AVAILABLE, error={**record, "kind": "paused"})
        if isinstance(exc, (JobCancelled, asyncio.CancelledError)) and run.ctx.cancelled:
            return outcome(run, JobState.CANCELLED, error={**record, "kind": "cancelled"})
        policy = run.task.options.retry
        return self.failure(run, record, policy.retryable(exc),
                            policy.delay(job.counted_attempt, exc))

    def failure(self, run: Run, record: dict[str, Any], retryable: bool,
                delay: float) -> Outcome:
        """Retry after ``delay`` seconds, or dead when attempts are spent or it can't retry."""
        job = run.job
        if job.counted_attempt >= job.max_attempts or not retryable:
            return outcome(run, JobState.DEAD, error=record)
        run_at = later(self.clock.now(), delay)
        return outcome(run, JobState.RETRYING, error={**record, "retry_in": delay},
                       run_at=run_at)
