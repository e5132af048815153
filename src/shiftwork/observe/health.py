"""Is work flowing? Queue thresholds, live workers, late schedules, and plugged-in checks.

``check_health(app)`` answers with a :class:`HealthReport`; ``shiftwork health``
prints it and exits non-zero when it has problems, so any monitoring system can
use it as a probe.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from shiftwork.core.errors import StorageError
from shiftwork.model.records import QueueStats, WaitingTask, WorkerInfo
from shiftwork.model.table_health import TableHealth
from shiftwork.observe.hooks import Problem, ScheduleStatus
from shiftwork.observe.table_health import WARNING, table_problems
from shiftwork.observe.text import format_age

if TYPE_CHECKING:
    from shiftwork.app import App


@dataclass(frozen=True)
class HealthReport:
    checked_at: datetime | None
    problems: list[Problem] = field(default_factory=list)
    queues: list[QueueStats] = field(default_factory=list)
    workers_alive: int = 0
    schedules: list[ScheduleStatus] = field(default_factory=list)
    #: problems of severity "warning": reported, but the report is still ok
    warnings: list[Problem] = field(default_factory=list)
    table: TableHealth | None = None  # the jobs table's own health, when it could be read

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def status(self) -> str:
        """``"ok"``, ``"warning"`` (only warnings) or ``"unhealthy"``."""
        return "unhealthy" if self.problems else "warning" if self.warnings else "ok"


def worker_stale_after(app: App) -> float:
    """A worker whose last heartbeat is older than this is not counted as alive."""
    s = app.settings
    return max(3 * s.heartbeat_interval, s.lease_seconds)


def alive_workers(app: App, workers: list[WorkerInfo], now: datetime) -> list[WorkerInfo]:
    stale = worker_stale_after(app)
    return [w for w in workers if (now - w.heartbeat_at).total_seconds() <= stale]


def max_wait_for(app: App, queue: str, default: float | None = None) -> float | None:
    options = app.queue_options.get(queue)
    if options is not None and options.max_wait is not None:
        return options.max_wait
    return default


def queue_problems(app: App, stats: list[QueueStats],
                   default_max_wait: float | None = None) -> list[Problem]:
    problems = []
    for s in stats:
        limit = max_wait_for(app, s.queue, default_max_wait)
        age = s.oldest_waiting_age
        if limit is not None and age is not None and age > limit:
            paused = " (the queue is paused)" if s.paused else ""
            problems.append(Problem(
                "queue_stalled", s.queue,
                f"queue {s.queue}: oldest waiting job has waited {age:.0f}s, over its max_wait "
                f"of {limit:.0f}s{paused}; {s.available} waiting, {s.running} running: are its "
                "workers up and keeping pace?"))
    return problems


def unserved(waiting: list[WaitingTask], alive: list[WorkerInfo]
             ) -> list[tuple[WaitingTask, str]]:
    """The waiting jobs no live worker will run, with why: ``"queue"`` (no live worker
    serves their queue) or ``"task"`` (none of the queue's live workers registers their
    task: a rolling deploy's new task before a new worker is up, a task removed from the
    code). A worker of an older release, which did not say its tasks, counts as
    registering every task."""
    out = []
    for w in waiting:
        serving = [a for a in alive if w.queue in a.queues]
        if not serving:
            out.append((w, "queue"))
        elif not any(a.tasks is None or w.task in a.tasks for a in serving):
            out.append((w, "task"))
    return out


def unserved_problems(waiting: list[WaitingTask], alive: list[WorkerInfo], now: datetime,
                      grace: float) -> list[Problem]:
    """:func:`unserved` as problems, once the oldest has waited ``grace`` seconds (a
    deploy in progress is not an alarm): one per task, one per queue."""
    problems = []
    queues: dict[str, list[WaitingTask]] = {}
    for w, why in unserved(waiting, alive):
        age = (now - w.oldest_created_at).total_seconds()
        if age < grace:
            continue
        if why == "queue":
            queues.setdefault(w.queue, []).append(w)
            continue
        problems.append(Problem(
            "task_unserved", w.task,
            f"task {w.task}: {w.jobs} job(s) wait in queue {w.queue}, the oldest enqueued "
            f"{age:.0f}s ago, and no live worker serving {w.queue} registers the task: "
            "deploy workers whose code defines it (or cancel the jobs)"))
    for queue, rows in sorted(queues.items()):
        age = max((now - w.oldest_created_at).total_seconds() for w in rows)
        problems.append(Problem(
            "queue_unserved", queue,
            f"queue {queue}: {sum(w.jobs for w in rows)} job(s) wait, the oldest enqueued "
            f"{age:.0f}s ago, and no live worker serves the queue: start one with -q {queue}"))
    return problems


@dataclass(frozen=True)
class TaskItems:
    """A task's ``expect_items`` against what its jobs reported over its window."""

    task: str
    expect_items: int
    within: float  # seconds
    succeeded: int  # its jobs that succeeded in the window
    items: int  # the items they reported

    @property
    def empty(self) -> bool:
        """Jobs succeed, yet together they processed too little (no job at all is not
        this check's business: the queue's max_wait and the schedules' dead-man switch)."""
        return self.succeeded > 0 and self.items < self.expect_items


def task_items(app: App, now: datetime) -> list[TaskItems]:
    """Every task declaring ``expect_items``, with its window's counts (one read of the
    per-minute counts per distinct window; minutes that began inside the window count)."""
    tasks = [t for t in app.tasks.values() if t.options.expect_items is not None]
    counts: dict[float, dict[str, tuple[int, int]]] = {}
    out = []
    for t in sorted(tasks, key=lambda t: t.name):
        within = t.options.expect_items_within
        if within not in counts:
            counts[within] = app.store.observe.task_minutes_since(now - timedelta(seconds=within))
        succeeded, items = counts[within].get(t.name, (0, 0))
        out.append(TaskItems(t.name, t.options.expect_items or 0, within, succeeded, items))
    return out


def task_items_problems(statuses: list[TaskItems]) -> list[Problem]:
    """:func:`task_items` as problems: one ``task_empty`` per task running empty."""
    return [Problem(
        "task_empty", s.task,
        f"task {s.task}: {s.succeeded} job(s) succeeded in the last {s.within:g}s but "
        f"reported {s.items} item(s) processed, under its expect_items of {s.expect_items}: "
        "is its input empty, or does it no longer call ctx.processed?")
        for s in statuses if s.empty]


def with_declared_queues(app: App, stats: list[QueueStats]) -> list[QueueStats]:
    """Every queue the code declares counts, the empty ones too (an empty queue is
    healthy, and a probe's reader must see that it was checked)."""
    declared = {t.options.queue for t in app.tasks.values()} | set(app.queue_options)
    seen = {s.queue for s in stats}
    empty = [QueueStats(q, 0, 0, 0, 0, 0, 0, None) for q in declared - seen]
    return sorted(stats + empty, key=lambda s: s.queue)


def last_seen(app: App, workers: list[WorkerInfo], now: datetime) -> str:
    """When a worker was last seen: a stale row's last heartbeat; else, since a worker
    that stops removes its row, the last minute in which workers finished jobs (the
    throughput table, kept a day)."""
    last = max((w.heartbeat_at for w in workers), default=None)
    if last is not None:
        return f"last seen {format_age((now - last).total_seconds())} ago, its last heartbeat"
    try:
        minutes = app.store.observe.queue_minutes_list(now - timedelta(days=1))
    except StorageError:
        minutes = []
    finished = max((m.minute for m in minutes), default=None)
    if finished is None:
        return "none seen in the last day"
    return (f"last seen {format_age((now - finished).total_seconds())} ago, finishing jobs; "
            "a worker that stops removes its row")


def check_health(app: App, *, default_max_wait: float | None = None,
                 require_worker: bool = True) -> HealthReport:
    """Check queues against their ``max_wait``, live workers, schedules and plugged-in checks.

    ``default_max_wait`` applies to queues that declare none (``app.queue(name, max_wait=)``).
    """
    store = app.store
    try:
        now = store.db_now()
        stats = app.queue_stats(include_finished=False)
        workers = store.fleet.workers_list()
        waiting = store.observe.jobs_waiting_by_task()
    except StorageError as exc:
        return HealthReport(None, [Problem("database", "database",
                                           f"cannot read the job tables: {exc}")])
    stats = with_declared_queues(app, stats)
    problems = queue_problems(app, stats, default_max_wait)
    alive = alive_workers(app, workers, now)
    if require_worker and not alive:
        problems.append(Problem("no_worker", "workers", f"no worker is alive "
                                f"({last_seen(app, workers, now)}): start `shiftwork worker`"))
    if alive:  # with none alive, the problem above says all there is to say
        problems.extend(unserved_problems(waiting, alive, now, worker_stale_after(app)))
    schedules = app.observers.schedules_status()
    for sch in schedules:
        if sch.late:
            why = f": {sch.reason}" if sch.reason else ""
            problems.append(Problem("schedule_late", sch.name, f"schedule {sch.name} is late{why}"))
        if sch.empty:
            problems.append(Problem("schedule_empty", sch.name,
                                    f"schedule {sch.name} is empty: {sch.empty_reason}"))
    try:
        problems.extend(task_items_problems(task_items(app, now)))
    except StorageError as exc:
        problems.append(Problem("database", "database", f"cannot read task_minutes: {exc}"))
    table = None
    try:
        table = store.table_health()
        problems.extend(table_problems(app.settings, table))
    except StorageError as exc:  # e.g. a role that may not read the statistics views
        problems.append(Problem("table_health", "database",
                                f"cannot read the jobs table's health: {exc}", WARNING))
    for check in list(app.observers.health_checks):
        problems.extend(check(app))
    warnings = [p for p in problems if p.severity == WARNING]
    return HealthReport(now, [p for p in problems if p.severity != WARNING], stats,
                        len(alive), schedules, warnings, table)
