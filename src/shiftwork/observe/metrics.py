"""Prometheus metrics: queue gauges from one cheap query, task counters from events.

Every scrape reads the database once for queues (``queues_stats`` without history),
once for workers and once for running jobs per worker; task counters and the
duration histogram count what *this process* ran (a worker's events), so each
worker exposes its own and Prometheus sums them.

Names (all ``shiftwork_``): see docs/observability.md.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from shiftwork.core.errors import StorageError
from shiftwork.observe.health import alive_workers, max_wait_for, task_items, unserved

if TYPE_CHECKING:
    from shiftwork.app import App

log = logging.getLogger("shiftwork.observe.metrics")

CONTENT_TYPE = CONTENT_TYPE_LATEST
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
                    600, 1800, 3600)

_COUNTED = {"job.succeeded": "succeeded", "job.failed": "failed", "job.retried": "retried",
            "job.dead": "dead", "job.cancelled": "cancelled"}


class Metrics:
    """The metrics of one app in one process, in their own registry.

    >>> metrics = Metrics(app)           # subscribes to app.events
    >>> body = metrics.exposition()      # text for a /metrics response
    """

    def __init__(self, app: App, in_flight: Callable[[], dict[str, int]] | None = None) -> None:
        self.app = app
        self.registry = CollectorRegistry(auto_describe=False)
        labels = ["task", "queue"]
        r = self.registry
        self.jobs = {
            "succeeded": Counter("shiftwork_jobs_succeeded", "Jobs that succeeded.", labels,
                                 registry=r),
            "failed": Counter("shiftwork_jobs_failed",
                              "Attempts that failed (then retried or dead).", labels, registry=r),
            "retried": Counter("shiftwork_jobs_retried", "Failed attempts scheduled to retry.",
                               labels, registry=r),
            "dead": Counter("shiftwork_jobs_dead", "Jobs that failed their last attempt.", labels,
                            registry=r),
            "cancelled": Counter("shiftwork_jobs_cancelled", "Running jobs that were cancelled.",
                                 labels, registry=r),
        }
        self.rescued = Counter("shiftwork_jobs_rescued",
                               "Jobs whose worker stopped renewing the lease, by what became of "
                               "them.", ["state"], registry=r)
        self.rate_limited = Counter("shiftwork_rate_limited",
                                    "Jobs that reported a rate limit upstream "
                                    "(ctx.rate_limited), holding their task back.", labels,
                                    registry=r)
        self.memory_limited = Counter("shiftwork_jobs_memory_limited",
                                      "Attempts ended by their memory ceiling "
                                      "(MemoryLimitExceeded).", labels, registry=r)
        self.duration = Histogram("shiftwork_job_duration_seconds",
                                  "Time one attempt ran, by task, for finished attempts.", labels,
                                  buckets=DURATION_BUCKETS, registry=r)
        self.items = Counter("shiftwork_items_processed",
                             "Items the task's succeeded jobs reported processing "
                             "(ctx.processed).", labels, registry=r)
        self._in_flight = in_flight
        self._lock = threading.Lock()
        self.registry.register(_StoreCollector(self))
        self._unsubscribe = app.events.subscribe(self._on_event)

    def close(self) -> None:
        self._unsubscribe()

    def _on_event(self, name: str, fields: dict[str, Any]) -> None:
        if name == "job.rescued":
            self.rescued.labels(str(fields.get("state", ""))).inc()
            return
        if name == "job.rate_limited":
            self.rate_limited.labels(str(fields.get("task", "")),
                                     str(fields.get("queue", ""))).inc()
            return
        kind = _COUNTED.get(name)
        task = fields.get("task")
        if kind is None or not task:
            return
        queue = str(fields.get("queue", ""))
        self.jobs[kind].labels(task, queue).inc()
        if name == "job.failed" and fields.get("kind") == "memory_limit":
            self.memory_limited.labels(task, queue).inc()
        if name == "job.succeeded" and fields.get("items") is not None:
            self.items.labels(task, queue).inc(int(fields["items"]))
        if name in ("job.succeeded", "job.retried", "job.dead", "job.cancelled") \
                and fields.get("duration") is not None:
            self.duration.labels(task, queue).observe(float(fields["duration"]))

    def exposition(self) -> bytes:
        """The Prometheus text format, reading the database now."""
        with self._lock:
            return generate_latest(self.registry)


class _StoreCollector:
    """Gauges read from the database at scrape time."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterable[Metric]:
        app = self.metrics.app
        up = GaugeMetricFamily("shiftwork_database_up",
                               "1 when the last scrape could read the job tables.")
        try:
            families = list(self._read(app))
        except StorageError as exc:
            log.warning("metrics scrape could not read the database: %s", exc)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from families
        for collector in list(app.observers.metric_collectors):
            try:
                yield from collector(app)
            except Exception:
                log.exception("metric collector %r failed", collector)

    def _read(self, app: App) -> Iterable[Metric]:
        store = app.store
        stats = app.queue_stats(include_finished=False)
        now = store.db_now()
        workers = store.fleet.workers_list()
        running = store.observe.workers_running()
        q = ["queue"]
        g = {
            "waiting": GaugeMetricFamily("shiftwork_queue_waiting",
                                         "Jobs due and waiting to be claimed.", labels=q),
            "scheduled": GaugeMetricFamily("shiftwork_queue_scheduled",
                                           "Jobs waiting for a future run_at (delayed or "
                                           "backing off).", labels=q),
            "running": GaugeMetricFamily("shiftwork_queue_running", "Jobs running.", labels=q),
            "dead": GaugeMetricFamily("shiftwork_queue_dead",
                                      "Dead jobs kept (until retried, discarded or pruned).",
                                      labels=q),
            "age": GaugeMetricFamily("shiftwork_queue_oldest_waiting_age_seconds",
                                     "How long the oldest due job has waited; 0 when none waits.",
                                     labels=q),
            "paused": GaugeMetricFamily("shiftwork_queue_paused", "1 when the queue is paused.",
                                        labels=q),
        }
        limit = GaugeMetricFamily("shiftwork_queue_max_wait_seconds",
                                  "The oldest-waiting age the queue tolerates (app.queue("
                                  "max_wait=)).", labels=q)
        seen = set()
        for s in stats:
            seen.add(s.queue)
            g["waiting"].add_metric([s.queue], s.available)
            g["scheduled"].add_metric([s.queue], s.scheduled)
            g["running"].add_metric([s.queue], s.running)
            g["dead"].add_metric([s.queue], s.dead)
            g["age"].add_metric([s.queue], max(s.oldest_waiting_age or 0.0, 0.0))
            g["paused"].add_metric([s.queue], 1 if s.paused else 0)
        # Declared and known queues appear even when empty, so an alert sees them at 0.
        known = {t.options.queue for t in app.tasks.values()} | set(app.queue_options)
        for queue in sorted(known - seen):
            for key in ("waiting", "scheduled", "running", "dead", "age", "paused"):
                g[key].add_metric([queue], 0)
        for queue in sorted(known | seen):
            max_wait = max_wait_for(app, queue)
            if max_wait is not None:
                limit.add_metric([queue], max_wait)
        yield from g.values()
        yield limit
        tokens = GaugeMetricFamily("shiftwork_rate_limit_tokens",
                                   "Starts a queue's or task's rate limit allows right now "
                                   "(per-group limits are not labelled one by one).",
                                   labels=["limit"])
        for status in app.rate_limits():
            if not status.key.startswith("group:"):
                tokens.add_metric([status.key], status.limit.capacity if status.tokens is None
                                  else status.tokens)
        yield tokens
        groups = GaugeMetricFamily("shiftwork_queue_groups",
                                   "Groups of a queue with waiting (or running) jobs: one "
                                   "series per queue and state, never one per group.",
                                   labels=["queue", "state"])
        for counts in app.store.observe.queue_group_counts():
            groups.add_metric([counts.queue, "waiting"], counts.waiting)
            groups.add_metric([counts.queue, "running"], counts.running)
        yield groups

        live = alive_workers(app, workers, now)
        alive = {w.id for w in live}
        stranded = GaugeMetricFamily(
            "shiftwork_unserved_jobs", "Waiting jobs no live worker will run: none serves "
            "their queue (why=queue) or none of the queue's registers their task (why=task).",
            labels=["queue", "task", "why"])
        for waiting, why in unserved(app.store.observe.jobs_waiting_by_task(), live):
            stranded.add_metric([waiting.queue, waiting.task, why], waiting.jobs)
        yield stranded
        expecting = task_items(app, now)
        if expecting:
            empty = GaugeMetricFamily(
                "shiftwork_task_empty", "1 when the task's jobs succeeded within its "
                "expect_items_within but reported fewer items than its expect_items.",
                labels=["task"])
            for expected in expecting:
                empty.add_metric([expected.task], 1 if expected.empty else 0)
            yield empty
        w = ["worker"]
        up = GaugeMetricFamily("shiftwork_worker_up",
                               "1 while the worker's heartbeat is recent.", labels=w)
        in_flight = GaugeMetricFamily("shiftwork_worker_jobs_in_flight",
                                      "Jobs the worker is running.", labels=w)
        beat = GaugeMetricFamily("shiftwork_worker_last_heartbeat_timestamp_seconds",
                                 "When the worker last renewed its leases (Unix time).", labels=w)
        local = self.metrics._in_flight() if self.metrics._in_flight else {}
        for info in workers:
            up.add_metric([info.id], 1 if info.id in alive else 0)
            in_flight.add_metric([info.id], local.get(info.id, running.get(info.id, 0)))
            beat.add_metric([info.id], info.heartbeat_at.timestamp())
        count = GaugeMetricFamily("shiftwork_workers_alive",
                                  "Workers whose heartbeat is recent.")
        count.add_metric([], len(alive))
        yield from (up, in_flight, beat, count)

        schedules = app.observers.schedules_status()
        if schedules:
            s_ = ["schedule"]
            last = GaugeMetricFamily("shiftwork_schedule_last_success_timestamp_seconds",
                                     "When the schedule's last job succeeded (Unix time).",
                                     labels=s_)
            nxt = GaugeMetricFamily("shiftwork_schedule_next_fire_timestamp_seconds",
                                    "The schedule's next intended fire time (Unix time).",
                                    labels=s_)
            late = GaugeMetricFamily("shiftwork_schedule_late", "1 when the schedule is late.",
                                     labels=s_)
            for sch in schedules:
                if sch.last_success_at is not None:
                    last.add_metric([sch.name], sch.last_success_at.timestamp())
                if sch.next_fire_at is not None:
                    nxt.add_metric([sch.name], sch.next_fire_at.timestamp())
                late.add_metric([sch.name], 1 if sch.late else 0)
            empty = GaugeMetricFamily("shiftwork_schedule_empty",
                                      "1 when the schedule's newest judged run succeeded with "
                                      "fewer items than it expects (expect_items=).",
                                      labels=s_)
            for sch in schedules:
                empty.add_metric([sch.name], 1 if sch.empty else 0)
            yield from (last, nxt, late, empty)
