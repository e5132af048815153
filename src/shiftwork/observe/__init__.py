"""Visibility: metrics, health, structured logs, tracing and the live views.

Importing this package is cheap: Prometheus, OpenTelemetry and the web stack are
imported only by the modules that need them.
"""

from shiftwork.observe.health import HealthReport, check_health
from shiftwork.observe.hooks import Observers, Problem, SchedulesSource, ScheduleStatus

__all__ = ["HealthReport", "Observers", "Problem", "ScheduleStatus", "SchedulesSource",
           "check_health"]
