"""What visibility tools show and health checks report: plain records, below every
layer that produces them (the schedule book, the observers) and every one that shows
them (metrics, ``shiftwork health``, the dashboard)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Problem:
    """One reason the system is unhealthy."""

    kind: str  # "queue_stalled", "queue_unserved", "task_unserved", "schedule_late",
    #            "schedule_empty", "task_empty", "no_worker", "database", or a plugin's own
    subject: str  # the queue, schedule or component concerned
    message: str  # what is wrong and what to look at, in words
    # "unhealthy" fails `shiftwork health` (exit 1); "warning" is reported, exit 0.
    severity: str = "unhealthy"

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class ScheduleStatus:
    """One schedule as visibility tools show it."""

    name: str
    next_fire_at: datetime | None = None
    last_success_at: datetime | None = None  # when its last job succeeded
    late: bool = False  # an intended fire was not enqueued/run in time
    reason: str = ""  # why it is late, in words, for `shiftwork health`
    cron: str = ""  # its expression and time zone, for display
    task: str = ""
    paused: bool = False
    origin: str = "code"  # 'runtime': added with app.schedules.add (removable at run time)
    empty: bool = False  # its newest judged run succeeded with too few items (expect_items=)
    empty_reason: str = ""  # why, in words
