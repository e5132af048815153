"""What an App declares, in one place: tasks, queues, schedules and the hooks services call.

The worker, the scheduler, the observers, the workflow runner and the testing tools read
declarations from here (through the :class:`~shiftwork.runtime.Runtime`), never from the
App. Filled by the App's declaring methods (``app.task``, ``app.queue``, ``app.schedule``,
the ``on_*`` hooks).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from shiftwork.core.errors import UnknownTaskError
from shiftwork.core.names import did_you_mean
from shiftwork.model.limits import RateLimit
from shiftwork.model.records import EmptyRun, EnqueueResult, LateRun
from shiftwork.observers import Observers
from shiftwork.schedules.definition import ScheduleDef
from shiftwork.store.task_defaults import TaskDefaults

if TYPE_CHECKING:
    from shiftwork.jobs.task import Task
    from shiftwork.store.base import Store

#: Called after jobs are committed by an enqueue outside a caller's transaction, with their
#: results and queues (None: not known); the inline test mode's hook.
EnqueueHook = Callable[[list[EnqueueResult], "set[str] | None"], None]


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

    def known_queues(self, store: Store) -> set[str]:
        """Queues declared in code or seen in the table (jobs waiting, running or dead;
        paused queues). Reads no finished history."""
        known = self.declared_queues()
        known |= {s.queue for s in store.jobs.queues_stats(include_finished=False)}
        return known | store.long_jobs.queues_paused()

    def unknown_queue_warning(self, store: Store, queue: str) -> str | None:
        """A warning naming the known queues when ``queue`` is none of them (a typo?)."""
        known = sorted(self.known_queues(store))
        if queue in known:
            return None
        return (f"queue {queue!r} is not known: no task declares it and no job is in it"
                f"{did_you_mean(queue, known)} (known queues: {', '.join(known) or 'none'})")
