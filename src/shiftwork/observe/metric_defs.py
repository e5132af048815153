"""The one list of shiftwork's metrics (name, kind, help, labels) and what each job event
adds to them.

Two exporters read it: ``observe/metrics.py`` (Prometheus, with the database gauges read
at scrape time) and ``observe/otel_metrics.py`` (the OpenTelemetry metrics API, for the
counters and the histogram this process counts from its events). Neither names a metric
of its own, so the two cannot drift apart; the docs' table and alert rules are checked
against this list (tests/test_docs.py, tests/test_prometheus.py).

Counter names are given without Prometheus's ``_total`` suffix, which the Prometheus
client (and an OpenTelemetry Prometheus exporter) adds.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["counter", "histogram", "gauge"]

DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
                    600, 1800, 3600)


@dataclass(frozen=True)
class MetricDef:
    name: str
    kind: Kind
    help: str
    labels: tuple[str, ...] = ()
    unit: str = ""  # the OpenTelemetry unit ("s"); Prometheus has it in the name

    @property
    def exposed(self) -> str:
        """The name a Prometheus scrape shows (counters end in ``_total``)."""
        return self.name + "_total" if self.kind == "counter" else self.name


_TQ = ("task", "queue")


def _counter(name: str, help: str, labels: tuple[str, ...] = _TQ) -> MetricDef:
    return MetricDef(name, "counter", help, labels)


def _gauge(name: str, help: str, *labels: str) -> MetricDef:
    return MetricDef(name, "gauge", help, labels)


# -- counted from this process's job events --------------------------------------------
SUCCEEDED = _counter("shiftwork_jobs_succeeded", "Jobs that succeeded.")
FAILED = _counter("shiftwork_jobs_failed", "Attempts that failed (then retried or dead).")
RETRIED = _counter("shiftwork_jobs_retried", "Failed attempts scheduled to retry.")
DEAD = _counter("shiftwork_jobs_dead", "Jobs that failed their last attempt.")
CANCELLED = _counter("shiftwork_jobs_cancelled", "Running jobs that were cancelled.")
RESCUED = _counter("shiftwork_jobs_rescued", "Jobs whose worker stopped renewing the lease, by "
                   "what became of them.", ("state",))
RATE_LIMITED = _counter("shiftwork_rate_limited", "Jobs that reported a rate limit upstream "
                        "(ctx.rate_limited), holding their task back.")
MEMORY_LIMITED = _counter("shiftwork_jobs_memory_limited", "Attempts ended by their memory "
                          "ceiling (MemoryLimitExceeded).")
DURATION = MetricDef("shiftwork_job_duration_seconds", "histogram",
                     "Time one attempt ran, by task, for finished attempts.", _TQ, unit="s")
ITEMS = _counter("shiftwork_items_processed", "Items the task's succeeded jobs reported "
                 "processing (ctx.processed).")

EVENT_METRICS: tuple[MetricDef, ...] = (SUCCEEDED, FAILED, RETRIED, DEAD, CANCELLED, RESCUED,
                                        RATE_LIMITED, MEMORY_LIMITED, DURATION, ITEMS)

# -- read from the database at scrape time (Prometheus only) ---------------------------
DATABASE_UP = _gauge("shiftwork_database_up", "1 when the last scrape could read the job tables.")
QUEUE_WAITING = _gauge("shiftwork_queue_waiting", "Jobs due and waiting to be claimed.", "queue")
QUEUE_SCHEDULED = _gauge("shiftwork_queue_scheduled", "Jobs waiting for a future run_at "
                         "(delayed or backing off).", "queue")
QUEUE_RUNNING = _gauge("shiftwork_queue_running", "Jobs running.", "queue")
QUEUE_HELD = _gauge("shiftwork_queue_held", "Jobs on hold (app.hold): never claimed until "
                    "released, and not counted as waiting.", "queue")
QUEUE_DEAD = _gauge("shiftwork_queue_dead", "Dead jobs kept (until retried, discarded or "
                    "pruned).", "queue")
QUEUE_AGE = _gauge("shiftwork_queue_oldest_waiting_age_seconds", "How long the oldest due job "
                   "has waited; 0 when none waits.", "queue")
QUEUE_PAUSED = _gauge("shiftwork_queue_paused", "1 when the queue is paused.", "queue")
QUEUE_MAX_WAIT = _gauge("shiftwork_queue_max_wait_seconds", "The oldest-waiting age the queue "
                        "tolerates (app.queue(max_wait=)).", "queue")
RATE_LIMIT_TOKENS = _gauge("shiftwork_rate_limit_tokens", "Starts a queue's or task's rate "
                           "limit allows right now (per-group limits are not labelled one by "
                           "one).", "limit")
QUEUE_GROUPS = _gauge("shiftwork_queue_groups", "Groups of a queue with waiting (or running) "
                      "jobs: one series per queue and state, never one per group.",
                      "queue", "state")
UNSERVED = _gauge("shiftwork_unserved_jobs", "Waiting jobs no live worker will run: none serves "
                  "their queue (why=queue) or none of the queue's registers their task "
                  "(why=task).", "queue", "task", "why")
TASK_EMPTY = _gauge("shiftwork_task_empty", "1 when the task's jobs succeeded within its "
                    "expect_items_within but reported fewer items than its expect_items.",
                    "task")
WORKER_UP = _gauge("shiftwork_worker_up", "1 while the worker's heartbeat is recent.", "worker")
WORKER_IN_FLIGHT = _gauge("shiftwork_worker_jobs_in_flight", "Jobs the worker is running.",
                          "worker")
WORKER_HEARTBEAT = _gauge("shiftwork_worker_last_heartbeat_timestamp_seconds", "When the worker "
                          "last renewed its leases (Unix time).", "worker")
WORKERS_ALIVE = _gauge("shiftwork_workers_alive", "Workers whose heartbeat is recent.")
SCHEDULE_LAST_SUCCESS = _gauge("shiftwork_schedule_last_success_timestamp_seconds", "When the "
                               "schedule's last job succeeded (Unix time).", "schedule")
SCHEDULE_NEXT_FIRE = _gauge("shiftwork_schedule_next_fire_timestamp_seconds", "The schedule's "
                            "next intended fire time (Unix time).", "schedule")
SCHEDULE_LATE = _gauge("shiftwork_schedule_late", "1 when the schedule is late.", "schedule")
SCHEDULE_EMPTY = _gauge("shiftwork_schedule_empty", "1 when the schedule's newest judged run "
                        "succeeded with fewer items than it expects (expect_items=).",
                        "schedule")

DATABASE_METRICS: tuple[MetricDef, ...] = (
    DATABASE_UP, QUEUE_WAITING, QUEUE_SCHEDULED, QUEUE_RUNNING, QUEUE_HELD, QUEUE_DEAD,
    QUEUE_AGE, QUEUE_PAUSED, QUEUE_MAX_WAIT, RATE_LIMIT_TOKENS, QUEUE_GROUPS, UNSERVED, TASK_EMPTY,
    WORKER_UP, WORKER_IN_FLIGHT, WORKER_HEARTBEAT, WORKERS_ALIVE, SCHEDULE_LAST_SUCCESS,
    SCHEDULE_NEXT_FIRE, SCHEDULE_LATE, SCHEDULE_EMPTY)

# -- the jobs table's own health, read at most every Settings.table_health_every ----------
TABLE_LIVE = _gauge("shiftwork_table_live_tuples", "Live tuples of the table (statistics "
                    "views).", "table")
TABLE_DEAD = _gauge("shiftwork_table_dead_tuples", "Dead tuples vacuum has not removed yet "
                    "(statistics views).", "table")
TABLE_SIZE = _gauge("shiftwork_table_size_bytes", "Size of the table's heap.", "table")
TABLE_AUTOVACUUM = _gauge("shiftwork_table_last_autovacuum_timestamp_seconds", "When "
                          "autovacuum last vacuumed the table (Unix time; absent when never).",
                          "table")
TABLE_AUTOANALYZE = _gauge("shiftwork_table_last_autoanalyze_timestamp_seconds", "When "
                           "autovacuum last analysed the table (Unix time; absent when never).",
                           "table")
XMIN_AGE = _gauge("shiftwork_xmin_horizon_age_seconds", "Age of the oldest open or prepared "
                  "transaction holding back vacuum in this database; 0 when none.")
XMIN_XIDS = _gauge("shiftwork_xmin_horizon_age_xids", "How many transactions the oldest holder "
                   "of the xmin horizon (a transaction or a replication slot) holds it back; 0 "
                   "when none.")
INDEX_SIZE = _gauge("shiftwork_index_size_bytes", "Size of an index of the table.", "index")
INDEX_BLOAT = _gauge("shiftwork_index_bloat_estimate_bytes", "Wasted space of a b-tree index "
                     "of the table, estimated from the catalog (no pgstattuple); absent when "
                     "it cannot tell.", "index")
SQLITE_PAGES = _gauge("shiftwork_sqlite_pages", "Pages of the SQLite file (kind=total) and on "
                      "its freelist (kind=free).", "kind")
SQLITE_WAL = _gauge("shiftwork_sqlite_wal_bytes", "Size of the SQLite -wal file.")

#: Postgres's and SQLite's (each engine exports its own).
TABLE_METRICS: tuple[MetricDef, ...] = (
    TABLE_LIVE, TABLE_DEAD, TABLE_SIZE, TABLE_AUTOVACUUM, TABLE_AUTOANALYZE, XMIN_AGE,
    XMIN_XIDS, INDEX_SIZE, INDEX_BLOAT, SQLITE_PAGES, SQLITE_WAL)

ALL_METRICS: tuple[MetricDef, ...] = EVENT_METRICS + DATABASE_METRICS + TABLE_METRICS

_COUNTED = {"job.succeeded": SUCCEEDED, "job.failed": FAILED, "job.retried": RETRIED,
            "job.dead": DEAD, "job.cancelled": CANCELLED}
_TIMED = ("job.succeeded", "job.retried", "job.dead", "job.cancelled")

#: One change an event makes: add ``value`` to (or, for the histogram, observe it in) the
#: series of ``metric`` with these label values.
Sample = tuple[MetricDef, tuple[str, ...], float]


def event_samples(name: str, fields: Mapping[str, Any]) -> Iterator[Sample]:
    """What the job event ``name`` adds to the event metrics (both exporters apply it)."""
    if name == "job.rescued":
        yield RESCUED, (str(fields.get("state", "")),), 1
        return
    if name == "job.rate_limited":
        yield RATE_LIMITED, (str(fields.get("task", "")), str(fields.get("queue", ""))), 1
        return
    metric = _COUNTED.get(name)
    task = fields.get("task")
    if metric is None or not task:
        return
    labels = (str(task), str(fields.get("queue", "")))
    yield metric, labels, 1
    if name == "job.failed" and fields.get("kind") == "memory_limit":
        yield MEMORY_LIMITED, labels, 1
    if name == "job.succeeded" and fields.get("items") is not None:
        yield ITEMS, labels, int(fields["items"])
    if name in _TIMED and fields.get("duration") is not None:
        yield DURATION, labels, float(fields["duration"])
