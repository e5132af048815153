"""What a batch task's function receives per job (jobs/batching.py has the rules)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shiftwork.jobs.context import JobContext


@dataclass(frozen=True, eq=False)
class BatchItem:
    """One job of a batch: its arguments as enqueued, and its own job context (its id,
    attempt, ``ctx.processed``, checkpoints, cancel flag)."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    ctx: JobContext

    @property
    def job_id(self) -> int:
        """The job's id."""
        return self.ctx.job_id

    @property
    def attempt(self) -> int:
        """This run's attempt number (each job counts its own)."""
        return self.ctx.attempt
