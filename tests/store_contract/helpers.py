"""Small builders the contract tests share: jobs in, claims out."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from shiftwork.core.states import JobState
from shiftwork.flow import claiming
from shiftwork.model.new_job import NewJob
from shiftwork.model.outcome import Outcome
from shiftwork.model.records import ClaimedJob
from shiftwork.store.base import Store

LEASE = 30.0


def new_job(task: str = "t", queue: str = "q", *args: Any, priority: int = 0,
            max_attempts: int = 3, run_at: datetime | None = None,
            unique_key: str | None = None, meta: dict[str, Any] | None = None) -> NewJob:
    return NewJob(task=task, queue=queue, args_json=json.dumps({"args": list(args)}),
                  priority=priority, max_attempts=max_attempts, run_at=run_at,
                  unique_key=unique_key, meta_json=json.dumps(meta or {}))


def insert(store: Store, count: int = 1, **kwargs: Any) -> list[int]:
    return [r.id for r in store.jobs.insert([new_job(**kwargs) for _ in range(count)])]


def claim(store: Store, queue: str = "q", limit: int = 10, worker: str = "w1",
          limits: dict[str, int] | None = None) -> list[ClaimedJob]:
    return claiming.claim(store, queue, limit, worker, LEASE, limits)


def claim_one(store: Store, queue: str = "q", worker: str = "w1") -> ClaimedJob:
    [job] = claim(store, queue, 1, worker)
    return job


def done(job: ClaimedJob, state: JobState = JobState.SUCCEEDED, **kwargs: Any) -> Outcome:
    return Outcome(job.id, job.attempt, state, **kwargs)


def state(store: Store, job_id: int) -> JobState:
    return store.jobs.get(job_id).state
