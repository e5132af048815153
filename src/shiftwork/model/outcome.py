"""The outcome of one attempt: a value, decided apart from the write that records it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from shiftwork.core.states import JobState


@dataclass(frozen=True)
class Outcome:
    job_id: int
    attempt: int
    state: JobState  # SUCCEEDED, RETRYING, DEAD or CANCELLED; AVAILABLE: already given back
    run_at: datetime | None = None  # when RETRYING
    error: dict[str, Any] | None = None  # appended to the job's error history
    result_json: str | None = None
    duration: float = 0.0
    task: str = ""
    queue: str = ""
    peak_rss: int | None = None  # bytes: the peak resident size of a limited attempt's child
    items: int | None = None  # what the attempt reported processing (ctx.processed)
