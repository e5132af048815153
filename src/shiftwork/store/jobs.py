"""Jobs' engine-neutral Python, written once: claimed rows to ClaimedJob, outcomes to
parameters, retry and cancel (the claim loops are flow/'s). Each engine supplies
its SQL and its core's primitives (store/core.py); nothing here knows which engine runs it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from shiftwork.core.states import JobState
from shiftwork.model.new_job import NO_MARK, Mark, NewJob
from shiftwork.model.outcome import Outcome
from shiftwork.model.records import ClaimedJob, EnqueueResult, Job, RescuedJob
from shiftwork.store.core import EngineCore
from shiftwork.store.deps import Cascade
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


def dedup_params(jobs: list[NewJob]) -> dict[str, Any]:
    """The key columns of jobs whose key the unique_keys table holds: states joined by
    commas (None: any state)."""
    keys, hold_for, states, debounce = [], [], [], []
    for j in jobs:
        d = j.dedup
        assert d is not None
        keys.append(d.key)
        hold_for.append(d.hold_for)
        states.append(None if d.states is None else ",".join(d.states))
        debounce.append(d.debounce)
    return {"keys": keys, "hold_for": hold_for, "states": states, "debounce": debounce}


def split_dedup(jobs: list[NewJob],
                dedup: Callable[[list[NewJob]], list[EnqueueResult]],
                other: Callable[[list[NewJob]], list[EnqueueResult]]) -> list[EnqueueResult]:
    """Insert the jobs whose key the unique_keys table holds by ``dedup``, the others by
    ``other``; the results in the order of ``jobs``."""
    held = [i for i, j in enumerate(jobs) if j.dedup is not None]
    if len(held) == len(jobs):
        return dedup(jobs)
    rest = [i for i, j in enumerate(jobs) if j.dedup is None]
    out: list[EnqueueResult | None] = [None] * len(jobs)
    for positions, insert in ((rest, other), (held, dedup)):
        for i, r in zip(positions, insert([jobs[i] for i in positions]), strict=True):
            out[i] = r
    return [r for r in out if r is not None]


class JobsCommon:
    """The jobs statements written once over the engine core's primitives (retry, cancel,
    and a marked insert that marks after inserting); each engine's subclass
    (``<engine>/jobs.py``) adds the rest of ``store.jobs``."""

    def __init__(self, core: EngineCore, cascade: Cascade) -> None:
        self._cascade = cascade  # a finish resolves its dependents (store/deps.py)
        self._session = core._session
        self._one = core._one
        self._rows = core._rows
        self._notify = core._notify
        #: The driver's error for a unique index violated (another job holds the key).
        self._unique_violation = core._unique_violation

    def get(self, job_id: int) -> Job:
        raise NotImplementedError

    def insert(self, jobs: list[NewJob], conn: Any = None) -> list[EnqueueResult]:
        raise NotImplementedError

    def insert_marked(self, c: Any, jobs: list[NewJob], marks: list[Mark]
                      ) -> list[EnqueueResult]:
        """Insert ``jobs`` on ``c`` with their marks (jobs awaited, watched, group). Here:
        insert, then mark; an engine that can write them with the rows overrides this."""
        results = self.insert(jobs, conn=c)
        marked = [(r.id, m) for r, m in zip(results, marks, strict=True) if m != NO_MARK]
        if marked:
            self._rows(c, "deps_mark", ids=[i for i, _ in marked],
                       counts=[m.deps_pending for _, m in marked],
                       watch=[m.watched for _, m in marked],
                       groups=[m.group_id for _, m in marked],
                       marks=[(i, m.deps_pending, m.watched, m.group_id) for i, m in marked])
        return results

    def unique_keys_prune(self, limit: int = 10_000) -> int:
        """Delete the rows of unique_keys that can no longer hold their key."""
        with self._session() as c:
            return len(self._rows(c, "unique_keys_prune", limit=limit))

    def retry(self, job_id: int) -> Job:
        try:
            with self._session() as c:
                moved = self._one(c, "jobs_retry", id=job_id) is not None
                if moved:
                    self._notify(c, [ANY_QUEUE])
        except self._unique_violation as exc:
            raise retry_blocked_by_key(job_id) from exc
        job = self.get(job_id)
        if not moved:
            raise not_retryable(job)
        return job

    def cancel(self, job_id: int) -> Job:
        with self._session() as c:
            if self._one(c, "jobs_cancel_waiting", id=job_id) is None:
                self._one(c, "jobs_cancel_running", id=job_id)
            else:  # finished outside a completion: its dependents, in this transaction
                self._cascade.resolve(c, [job_id])
        return self.get(job_id)
