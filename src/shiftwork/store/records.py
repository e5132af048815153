"""Records the long-jobs part of the storage interface returns."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class EffectRecord:
    """One effect key: the first run's result, kept until ``expires_at`` (then pruned)."""

    key: str
    result: Any  # decoded JSON; None also while the first run's transaction is open
    job_id: int | None
    attempt: int | None
    created_at: datetime
    expires_at: datetime
