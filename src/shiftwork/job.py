"""A job about to be inserted, as enqueue builds it (what the store returns: records.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(slots=True)  # not frozen: a frozen dataclass costs 5x as much to build (bulk enqueue)
class NewJob:
    """A job about to be inserted: arguments already validated and encoded."""

    task: str
    queue: str
    args_json: str
    priority: int = 0
    max_attempts: int = 20
    run_at: datetime | None = None  # None: due now (database time)
    unique_key: str | None = None
    timeout: float | None = None
    meta_json: str = "{}"
