"""The hooks visibility features plug into, held by the Registry (``app.observers``):
the schedules view, health checks and metric collectors.

Checks and collectors are called with the App (observe/health.py, observe/metrics.py);
this registry only stores them, so it names no App: it sits below it
(``shiftwork.observe.hooks`` has the public aliases, typed with the App).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from shiftwork.core.errors import ConfigurationError
from shiftwork.model.visibility import Problem, ScheduleStatus


@runtime_checkable
class SchedulesSource(Protocol):
    def schedules_status(self) -> list[ScheduleStatus]:
        """Every schedule's state now (one or two cheap queries)."""


#: Called with the App (shiftwork.observe.hooks.HealthCheck names it).
HealthCheck = Callable[[Any], Iterable[Problem]]
#: Called with the App; yields ``prometheus_client`` metric families.
MetricCollector = Callable[[Any], Iterable[Any]]


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
            raise ConfigurationError("this app's schedules cannot be triggered by hand")
        return trigger(name)
