"""Prometheus metrics: queue gauges from one cheap query, task counters from events.

Every scrape reads the database once for queues (``queues_stats`` without history),
once for workers and once for running jobs per worker (and, at most once per
``Settings.table_health_every``, the jobs table's health from the catalogs); task counters and the
duration histogram count what *this process* ran (a worker's events), so each
worker exposes its own and Prometheus sums them.

Names, help and labels: observe/metric_defs.py (the OpenTelemetry exporter's too); the
table is in docs/observability.md.
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
from shiftwork.model.table_health import TableHealth
from shiftwork.observe import metric_defs as m
from shiftwork.observe.health import alive_workers, max_wait_for, task_items, unserved
from shiftwork.observe.metric_defs import DURATION_BUCKETS, EVENT_METRICS, MetricDef, event_samples
from shiftwork.observe.table_health import TableHealthCache

if TYPE_CHECKING:
    from shiftwork.app import App

log = logging.getLogger("shiftwork.observe.metrics")

CONTENT_TYPE = CONTENT_TYPE_LATEST


class Metrics:
    """The metrics of one app in one process, in their own registry.

    >>> metrics = Metrics(app)           # subscribes to app.events
    >>> body = metrics.exposition()      # text for a /metrics response
    """

    def __init__(self, app: App, in_flight: Callable[[], dict[str, int]] | None = None) -> None:
        self.app = app
        self.registry = CollectorRegistry(auto_describe=False)
        #: The event metrics by name (metric_defs.EVENT_METRICS, the OpenTelemetry
        #: exporter's too).
        self.counted: dict[str, Counter | Histogram] = {
            d.name: _event_metric(d, self.registry) for d in EVENT_METRICS}
        self._series: dict[tuple[str, tuple[str, ...]], Callable[[float], None]] = {}
        self._in_flight = in_flight
        self._lock = threading.Lock()
        self.table_health = TableHealthCache(app)  # catalog reads, at most once a period
        self.registry.register(_StoreCollector(self))
        self._unsubscribe = app.events.subscribe(self._on_event)

    def close(self) -> None:
        self._unsubscribe()

    def _on_event(self, name: str, fields: dict[str, Any]) -> None:
        for metric, labels, amount in event_samples(name, fields):
            key = (metric.name, labels)
            add = self._series.get(key)
            if add is None:  # first time for these labels (prometheus_client's labels() is
                # the costly part of counting, so each series' method is kept)
                series = self.counted[metric.name].labels(*labels)
                add = series.observe if isinstance(series, Histogram) else series.inc
                self._series[key] = add
            add(amount)

    def exposition(self) -> bytes:
        """The Prometheus text format, reading the database now."""
        with self._lock:
            return generate_latest(self.registry)


def _event_metric(d: MetricDef, registry: CollectorRegistry) -> Counter | Histogram:
    if d.kind == "histogram":
        return Histogram(d.name, d.help, d.labels, buckets=DURATION_BUCKETS, registry=registry)
    return Counter(d.name, d.help, d.labels, registry=registry)


def _family(d: MetricDef) -> GaugeMetricFamily:
    return GaugeMetricFamily(d.name, d.help, labels=list(d.labels))


class _StoreCollector:
    """Gauges read from the database at scrape time."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterable[Metric]:
        app = self.metrics.app
        up = _family(m.DATABASE_UP)
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
        try:
            yield from table_families(self.metrics.table_health.get())
        except StorageError as exc:  # e.g. a role that may not read the statistics views
            log.warning("metrics scrape could not read the jobs table's health: %s", exc)
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
        g = {
            "waiting": _family(m.QUEUE_WAITING),
            "scheduled": _family(m.QUEUE_SCHEDULED),
            "running": _family(m.QUEUE_RUNNING),
            "held": _family(m.QUEUE_HELD),
            "dead": _family(m.QUEUE_DEAD),
            "age": _family(m.QUEUE_AGE),
            "paused": _family(m.QUEUE_PAUSED),
        }
        limit = _family(m.QUEUE_MAX_WAIT)
        seen = set()
        for s in stats:
            seen.add(s.queue)
            g["waiting"].add_metric([s.queue], s.available)
            g["scheduled"].add_metric([s.queue], s.scheduled)
            g["running"].add_metric([s.queue], s.running)
            g["held"].add_metric([s.queue], s.held)
            g["dead"].add_metric([s.queue], s.dead)
            g["age"].add_metric([s.queue], max(s.oldest_waiting_age or 0.0, 0.0))
            g["paused"].add_metric([s.queue], 1 if s.paused else 0)
        # Declared and known queues appear even when empty, so an alert sees them at 0.
        known = {t.options.queue for t in app.tasks.values()} | set(app.queue_options)
        for queue in sorted(known - seen):
            for key in ("waiting", "scheduled", "running", "held", "dead", "age", "paused"):
                g[key].add_metric([queue], 0)
        for queue in sorted(known | seen):
            max_wait = max_wait_for(app, queue)
            if max_wait is not None:
                limit.add_metric([queue], max_wait)
        yield from g.values()
        yield limit
        tokens = _family(m.RATE_LIMIT_TOKENS)
        for status in app.rate_limits():
            if not status.key.startswith("group:"):
                tokens.add_metric([status.key], status.limit.capacity if status.tokens is None
                                  else status.tokens)
        yield tokens
        groups = _family(m.QUEUE_GROUPS)
        for counts in app.store.observe.queue_group_counts():
            groups.add_metric([counts.queue, "waiting"], counts.waiting)
            groups.add_metric([counts.queue, "running"], counts.running)
        yield groups

        live = alive_workers(app, workers, now)
        alive = {w.id for w in live}
        stranded = _family(m.UNSERVED)
        for waiting, why in unserved(app.store.observe.jobs_waiting_by_task(), live):
            stranded.add_metric([waiting.queue, waiting.task, why], waiting.jobs)
        yield stranded
        expecting = task_items(app, now)
        if expecting:
            empty = _family(m.TASK_EMPTY)
            for expected in expecting:
                empty.add_metric([expected.task], 1 if expected.empty else 0)
            yield empty
        up = _family(m.WORKER_UP)
        in_flight = _family(m.WORKER_IN_FLIGHT)
        beat = _family(m.WORKER_HEARTBEAT)
        local = self.metrics._in_flight() if self.metrics._in_flight else {}
        for info in workers:
            up.add_metric([info.id], 1 if info.id in alive else 0)
            in_flight.add_metric([info.id], local.get(info.id, running.get(info.id, 0)))
            beat.add_metric([info.id], info.heartbeat_at.timestamp())
        count = _family(m.WORKERS_ALIVE)
        count.add_metric([], len(alive))
        yield from (up, in_flight, beat, count)

        schedules = app.observers.schedules_status()
        if schedules:
            last = _family(m.SCHEDULE_LAST_SUCCESS)
            nxt = _family(m.SCHEDULE_NEXT_FIRE)
            late = _family(m.SCHEDULE_LATE)
            for sch in schedules:
                if sch.last_success_at is not None:
                    last.add_metric([sch.name], sch.last_success_at.timestamp())
                if sch.next_fire_at is not None:
                    nxt.add_metric([sch.name], sch.next_fire_at.timestamp())
                late.add_metric([sch.name], 1 if sch.late else 0)
            empty = _family(m.SCHEDULE_EMPTY)
            for sch in schedules:
                empty.add_metric([sch.name], 1 if sch.empty else 0)
            yield from (last, nxt, late, empty)


def table_families(t: TableHealth) -> Iterable[Metric]:
    """The jobs table's own health (observe/table_health.py), as of its cached reading."""
    if t.engine == "sqlite":
        pages, wal = _family(m.SQLITE_PAGES), _family(m.SQLITE_WAL)
        pages.add_metric(["total"], t.page_count or 0)
        pages.add_metric(["free"], t.free_pages or 0)
        wal.add_metric([], t.wal_bytes or 0)
        yield from (pages, wal)
        return
    live, dead, size = _family(m.TABLE_LIVE), _family(m.TABLE_DEAD), _family(m.TABLE_SIZE)
    vacuumed, analysed = _family(m.TABLE_AUTOVACUUM), _family(m.TABLE_AUTOANALYZE)
    live.add_metric([t.table], t.live_tuples or 0)
    dead.add_metric([t.table], t.dead_tuples or 0)
    size.add_metric([t.table], t.size_bytes or 0)
    if t.last_autovacuum is not None:
        vacuumed.add_metric([t.table], t.last_autovacuum.timestamp())
    if t.last_autoanalyze is not None:
        analysed.add_metric([t.table], t.last_autoanalyze.timestamp())
    yield from (live, dead, size, vacuumed, analysed)
    held, xids = _family(m.XMIN_AGE), _family(m.XMIN_XIDS)
    holders = [h for h in t.holders if not h.catalog_only]
    held.add_metric([], max((h.age_seconds or 0.0 for h in holders), default=0.0))
    xids.add_metric([], max((h.xid_age for h in holders), default=0))
    yield from (held, xids)
    ix_size, ix_bloat = _family(m.INDEX_SIZE), _family(m.INDEX_BLOAT)
    for ix in t.indexes:
        ix_size.add_metric([ix.name], ix.size_bytes)
        if ix.bloat_bytes is not None:
            ix_bloat.add_metric([ix.name], ix.bloat_bytes)
    yield from (ix_size, ix_bloat)
