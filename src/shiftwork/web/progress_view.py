"""A running job's progress as the dashboard draws it: a bar, a rate and an ETA.

The rate is the work done over the time since the attempt began (``attempted_at``); an
attempt resumed from a checkpoint reports its total ``done``, so the rate reads high at
first and settles. No total, no bar and no ETA: only the count and the rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from shiftwork.core.states import JobState
from shiftwork.jobs.checkpoint import Progress
from shiftwork.observe.text import format_age


@dataclass(frozen=True)
class ProgressView:
    fraction: float | None  # 0..1 for the bar; None without a total
    text: str  # "42% 4,200/10,000 copying rows"
    rate: str | None  # "120/s" while running
    eta: str | None  # "1.2m" while running, with a total


def progress_view(job: Any, now: datetime) -> ProgressView | None:
    progress = Progress.from_json(job.progress)
    if progress is None:
        return None
    rate = eta = None
    started = job.attempted_at
    if job.state is JobState.RUNNING and started is not None:
        elapsed = (now - started).total_seconds()
        if elapsed > 0 and progress.done > 0:
            per_second = progress.done / elapsed
            rate = _rate(per_second)
            if progress.total and progress.total > progress.done:
                eta = format_age((progress.total - progress.done) / per_second)
    return ProgressView(progress.fraction, progress.describe(), rate, eta)


def _rate(per_second: float) -> str:
    if per_second >= 1:
        return f"{per_second:,.1f}/s"
    return f"{per_second * 60:,.1f}/min"
