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
from typing import TYPE_CHECKING, Any

from shiftwork.model.visibility import Problem, ScheduleStatus
from shiftwork.registry import Observers, SchedulesSource

if TYPE_CHECKING:
    from shiftwork.app import App  # the checks and collectors people write are given it

__all__ = ["HealthCheck", "MetricCollector", "Observers", "Problem", "ScheduleStatus",
           "SchedulesSource"]

# Called with the App (typed by what every check may rely on: its store and settings).
# The registry below the App stores them as callables of anything (shiftwork/registry.py).
HealthCheck = Callable[["App"], Iterable[Problem]]
MetricCollector = Callable[["App"], Iterable[Any]]
