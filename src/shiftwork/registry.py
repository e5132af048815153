"""What an App declares, in one place: tasks, queues, schedules and the hooks services call.

The worker, the scheduler, the observers, the workflow runner and the testing tools read
declarations from here (through the :class:`~shiftwork.runtime.Runtime`), never from the
App. Filled by the App's declaring methods (``app.task``, ``app.queue``, ``app.schedule``,
the ``on_*`` hooks).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from shiftwork.core.errors import ConfigurationError, UnknownTaskError
from shiftwork.core.names import did_you_mean
from shiftwork.model.limits import ClaimFlow, RateLimit
from shiftwork.model.records import EmptyRun, EnqueueResult, LateRun, TaskDefaults
from shiftwork.model.visibility import Problem, ScheduleStatus

if TYPE_CHECKING:
    from shiftwork.jobs.task import Task
    from shiftwork.schedules.definition import ScheduleDef

#: Called after jobs are committed by an enqueue outside a caller's transaction, with their
#: results and queues (None: not known); the inline test mode's hook.
EnqueueHook = Callable[[list[EnqueueResult], "set[str] | None"], None]


# -- the hooks visibility features plug into (app.observers) -----------------------------
# Checks and collectors are called with the App (observe/health.py, observe/metrics.py);
# the registry only stores them, so it names no App: it sits below it
# (``shiftwork.observe.hooks`` has the public aliases, typed with the App).

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


@dataclass(frozen=True)
class QueueOptions:
    """What a queue declares about itself (see :meth:`App.queue`)."""

    name: str
    max_wait: float | None = None  # seconds the oldest waiting job may wait before alerting
    rate_limit: RateLimit | None = None  # at most N starts per period, fleet-wide
    fair: bool = False  # claims go round-robin across the queue's groups
    weights: dict[str, int] = field(default_factory=dict)  # group -> jobs per turn


@dataclass(frozen=True)
class LeaderDuty:
    """Leader-only work: ``fn(term)`` every ``interval`` seconds (default: every
    ``leader_ttl / 3``, the leader's own renewal) while this worker leads."""

    name: str
    fn: Callable[[int], object]
    interval: float | None = None


class Registry:
    """The declarations of one App."""

    def __init__(self) -> None:
        self.tasks: dict[str, Task[Any, Any]] = {}
        self.queue_options: dict[str, QueueOptions] = {}
        #: Schedules declared in code, reconciled into the database when a worker starts.
        #: The App puts its ScheduleBook here (which needs the Runtime, so it is made after
        #: it); the services only read the definitions, by name.
        self.schedules: Mapping[str, ScheduleDef] = {}
        self.enqueue_hooks: list[EnqueueHook] = []
        #: Called once per occurrence the dead-man switch finds late (on_schedule_late).
        self.schedule_late_hooks: list[Callable[[LateRun], None]] = []
        #: Called once per occurrence the items check finds empty (on_schedule_empty).
        self.schedule_empty_hooks: list[Callable[[EmptyRun], None]] = []
        #: Leader-only work of features, run by the leader's maintainer with the term
        #: (worker/maintenance/maintainer.py).
        self.leader_duties: list[LeaderDuty] = []
        #: Health checks, metric collectors, the schedules view (docs/observability.md).
        self.observers = Observers()

    def get_task(self, name: str) -> Task[Any, Any]:
        """The task registered as ``name``; the error names the closest ones."""
        try:
            return self.tasks[name]
        except KeyError:
            known = ", ".join(self.task_names()) or "none"
            hint = did_you_mean(name, self.task_names())
            raise UnknownTaskError(f"unknown task {name!r}{hint} (registered: {known})") from None

    def task_names(self) -> list[str]:
        """The registered tasks people may enqueue and schedule, sorted (shiftwork's
        internal ones left out)."""
        return sorted(name for name, task in self.tasks.items() if not task.internal)

    def task_defaults(self) -> list[TaskDefaults]:
        """The options a SQL enqueue of each public task takes (store/task_defaults.py)."""
        return [TaskDefaults(name, t.options.queue, t.options.priority,
                             t.options.max_attempts, t.options.timeout)
                for name, t in sorted(self.tasks.items()) if not t.internal]

    def concurrency_limits(self, queue: str) -> dict[str, int]:
        """Fleet-wide running limits of ``queue``'s tasks that have one, by task name."""
        return {t.name: t.options.concurrency for t in self.tasks.values()
                if t.options.queue == queue and t.options.concurrency is not None}

    def declared_queues(self) -> set[str]:
        """Queues named in code: by tasks, ``app.queue`` and schedules."""
        known = {t.options.queue for t in self.tasks.values()} | set(self.queue_options)
        return known | {d.queue for d in self.schedules.values()}

    def claim_flow(self, queue: str) -> ClaimFlow:
        """The rate limits and group caps a claim for ``queue`` must respect."""
        tasks = [t for t in self.tasks.values() if t.options.queue == queue]
        declared = self.queue_options.get(queue)
        return ClaimFlow(
            queue_rate=declared.rate_limit if declared else None,
            task_rates={t.name: t.options.rate_limit for t in tasks if t.options.rate_limit},
            group_caps={t.name: t.options.group_concurrency for t in tasks
                        if t.options.group_concurrency},
            group_rates={t.name: t.options.group_rate_limit for t in tasks
                         if t.options.group_rate_limit},
            fair=bool(declared and declared.fair),
            weights=dict(declared.weights) if declared else {})
