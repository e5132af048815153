"""Jobs' engine-neutral Python, written once: claimed rows to ClaimedJob, outcomes to
parameters, retry and cancel (the claim loops are flow/'s). Each engine supplies
its SQL and driver calls (store/engine_sql.py); nothing here knows which engine runs it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from shiftwork.core.states import JobState
from shiftwork.model.outcome import Outcome
from shiftwork.model.records import ClaimedJob, Job, RescuedJob
from shiftwork.store.engine_sql import EngineSql
from shiftwork.store.rows import not_retryable, retry_blocked_by_key, split_args
from shiftwork.store.wakeups import ANY_QUEUE

Row = Sequence[Any]


def claimed_jobs(rows: list[Row]) -> list[ClaimedJob]:
    """Claimed rows, in claim order, as the worker needs them.

    Every engine's claim returns these columns in this order: id, task, queue, args,
    attempt, max_attempts, timeout, checkpoint, meta (JSON as text), priority, run_at,
    uncounted.
    """
    rows.sort(key=lambda r: (-r[9], r[10], r[0]))
    claimed = []
    for r in rows:
        args, kwargs = split_args(r[3])
        claimed.append(ClaimedJob(
            id=r[0], task=r[1], queue=r[2], args=args, kwargs=kwargs, attempt=r[4],
            max_attempts=r[5], uncounted=r[11],
            timeout=r[6], checkpoint=None if r[7] is None else json.loads(r[7]),
            # an empty meta is the common case, and the claim is hot: not parsed
            meta={} if not r[8] or r[8] == "{}" else json.loads(r[8])))
    return claimed


def error_json(outcome: Outcome) -> str | None:
    """The error an outcome appends to the job's history, as JSON text."""
    return None if outcome.error is None else json.dumps(outcome.error)


def rescued_jobs(rows: list[Row]) -> list[RescuedJob]:
    """Rows of (id, state, task, queue, attempt) the rescue query returns."""
    return [RescuedJob(r[0], JobState(r[1]), r[2], r[3], r[4]) for r in rows]


def held_jobs(rows: list[Row]) -> list[tuple[int, int, bool]]:
    """Rows of (id, attempt, cancel requested) the heartbeat query returns."""
    return [(r[0], r[1], bool(r[2])) for r in rows]


class JobsActions(EngineSql):
    """``jobs_retry`` and ``jobs_cancel``, written once over the engine's primitives."""

    #: The driver's error for a unique index violated (another job holds the key).
    _unique_violation: type[Exception]

    def jobs_get(self, job_id: int) -> Job:
        raise NotImplementedError

    def jobs_retry(self, job_id: int) -> Job:
        try:
            with self._session() as c:
                moved = self._one(c, "jobs_retry", id=job_id) is not None
                if moved:
                    self._notify(c, [ANY_QUEUE])
        except self._unique_violation as exc:
            raise retry_blocked_by_key(job_id) from exc
        job = self.jobs_get(job_id)
        if not moved:
            raise not_retryable(job)
        return job

    def _finished_here(self, c: Any, job_ids: list[int]) -> None:
        """Jobs just finished on ``c`` outside a completion (store/deps.py resolves their
        dependents)."""

    def jobs_cancel(self, job_id: int) -> Job:
        with self._session() as c:
            if self._one(c, "jobs_cancel_waiting", id=job_id) is None:
                self._one(c, "jobs_cancel_running", id=job_id)
            else:
                self._finished_here(c, [job_id])
        return self.jobs_get(job_id)
