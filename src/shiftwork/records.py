"""Records the storage layer returns that are not jobs themselves (jobs: job.py).

A bottom module: it imports nothing of shiftwork, so the store and everything above it
can share these types without importing one another.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class Touch:
    """What one fenced write to a running job's row learned."""

    cancel_requested: bool  # someone ran `jobs cancel` on it
    paused: bool  # its queue is paused
    yielded: bool = False  # the write also gave the job back to its (paused) queue


@dataclass(frozen=True)
class EffectRecord:
    """One effect key: the first run's result, kept until ``expires_at`` (then pruned)."""

    key: str
    result: Any  # decoded JSON; None also while the first run's transaction is open
    job_id: int | None
    attempt: int | None
    created_at: datetime
    expires_at: datetime


@dataclass(frozen=True)
class QueueMinute:
    """How many jobs of one queue finished, and how, in one minute (UTC)."""

    queue: str
    minute: datetime
    succeeded: int = 0
    retried: int = 0
    dead: int = 0
    cancelled: int = 0

    @property
    def finished(self) -> int:
        return self.succeeded + self.dead + self.cancelled
