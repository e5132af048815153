"""Where features plug into metrics, health and the dashboard.

Each :class:`~shiftwork.App` has ``app.observers``. A feature that has something to
show (the scheduler, say) adds to it at set-up time:

- ``app.observers.schedules = source``: an object with ``schedules_status()`` (and,
  optionally, ``schedule_trigger(name)``); metrics, ``shiftwork health`` and the
  dashboard then show schedules. Without it they show none.
- ``app.observers.health_checks.append(fn)``: ``fn(app)`` returns problems (``Problem``).
- ``app.observers.metric_collectors.append(fn)``: ``fn(app)`` yields
  ``prometheus_client`` metric families, added to every scrape.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from shiftwork.app import App  # the checks and collectors people write are given it


@dataclass(frozen=True)
class Problem:
    """One reason the system is unhealthy."""

    kind: str  # "queue_stalled", "queue_unserved", "task_unserved", "schedule_late",
    #            "schedule_empty", "task_empty", "no_worker", "database", or a plugin's own
    subject: str  # the queue, schedule or component concerned
    message: str  # what is wrong and what to look at, in words

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


@runtime_checkable
class SchedulesSource(Protocol):
    def schedules_status(self) -> list[ScheduleStatus]:
        """Every schedule's state now (one or two cheap queries)."""


# Called with the App (typed by what every check may rely on: its store and settings).
HealthCheck = Callable[["App"], Iterable[Problem]]
MetricCollector = Callable[["App"], Iterable[Any]]


@dataclass
class Observers:
    schedules: SchedulesSource | None = None
    health_checks: list[HealthCheck] = field(default_factory=list)
    metric_collectors: list[MetricCollector] = field(default_factory=list)

    def schedules_status(self) -> list[ScheduleStatus]:
        return self.schedules.schedules_status() if self.schedules is not None else []

    def can_trigger(self) -> bool:
        return callable(getattr(self.schedules, "schedule_trigger", None))

    def trigger(self, name: str) -> Any:
        trigger = getattr(self.schedules, "schedule_trigger", None)
        if trigger is None:
            from shiftwork.core.errors import ConfigurationError

            raise ConfigurationError("this app's schedules cannot be triggered by hand")
        return trigger(name)
