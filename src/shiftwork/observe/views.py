"""What `shiftwork top` and the dashboard show, computed once from a few cheap queries."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from shiftwork.model.records import GroupStats, QueueMinute, QueueStats, WaitingTask, WorkerInfo
from shiftwork.observe.health import alive_workers, max_wait_for, unserved
from shiftwork.observe.hooks import ScheduleStatus

if TYPE_CHECKING:
    from shiftwork.app import App

#: Groups shown (``shiftwork queues``, the dashboard): the busiest only, never all of them.
BUSIEST_GROUPS = 10


@dataclass(frozen=True)
class QueueRow:
    stats: QueueStats
    max_wait: float | None
    per_minute: float  # finished jobs per minute over the last five minutes
    last_hour: list[QueueMinute]  # one entry per minute that had finished jobs
    last_60s: int = 0  # finished in the last 60 seconds (see finished_in_last_60s)

    @property
    def over(self) -> bool:
        age = self.stats.oldest_waiting_age
        return self.max_wait is not None and age is not None and age > self.max_wait


@dataclass(frozen=True)
class WorkerRow:
    info: WorkerInfo
    alive: bool
    in_flight: int
    heartbeat_age: float


@dataclass(frozen=True)
class Overview:
    now: datetime
    queues: list[QueueRow]
    workers: list[WorkerRow]
    schedules: list[ScheduleStatus] = field(default_factory=list)
    groups: list[GroupStats] = field(default_factory=list)  # the busiest groups
    #: waiting jobs no live worker will run, with why ("queue" or "task": health.unserved)
    unserved: list[tuple[WaitingTask, str]] = field(default_factory=list)

    @property
    def workers_alive(self) -> int:
        return sum(1 for w in self.workers if w.alive)


def finished_in_last_60s(history: list[QueueMinute], now: datetime) -> int:
    """Jobs finished in the 60 seconds before ``now``, from the per-minute counts: all of
    the current minute's and the share of the previous minute still inside the window
    (its jobs taken as spread evenly). Never the newest recorded minute, which may be
    hours old (top once showed "last minute 524" nine minutes after the last job)."""
    current = now.replace(second=0, microsecond=0)
    previous = current - timedelta(minutes=1)
    inside = 1.0 - (now - current).total_seconds() / 60.0
    total = 0.0
    for m in history:
        if m.minute == current:
            total += m.finished
        elif m.minute == previous:
            total += m.finished * inside
    return round(total)


def overview(app: App, window: float = 3600.0) -> Overview:
    store = app.store
    now = store.db_now()
    stats = {s.queue: s for s in app.queue_stats(include_finished=False)}
    minutes = store.observe.queue_minutes_list(now - timedelta(seconds=window))
    by_queue: dict[str, list[QueueMinute]] = {}
    for m in minutes:
        by_queue.setdefault(m.queue, []).append(m)
    known = set(stats) | set(by_queue) | set(app.queue_options) | {
        t.options.queue for t in app.tasks.values()}
    recent = now - timedelta(minutes=5)
    rows = []
    for queue in sorted(known):
        s = stats.get(queue) or QueueStats(queue, 0, 0, 0, 0, 0, 0, None)
        history = by_queue.get(queue, [])
        finished = sum(m.finished for m in history if m.minute >= recent)
        rows.append(QueueRow(s, max_wait_for(app, queue), finished / 5.0, history,
                             finished_in_last_60s(history, now)))
    workers = store.fleet.workers_list()
    live = alive_workers(app, workers, now)
    alive = {w.id for w in live}
    running = store.observe.workers_running()
    wrows = [WorkerRow(w, w.id in alive, running.get(w.id, 0),
                       (now - w.heartbeat_at).total_seconds()) for w in workers]
    stranded = unserved(store.observe.jobs_waiting_by_task(), live) if live else []
    return Overview(now, rows, wrows, app.observers.schedules_status(),
                    store.observe.groups_busiest(limit=BUSIEST_GROUPS), stranded)
