"""Settings: the timings of the worker machinery and the limits on what jobs store.

A bottom module (errors, bounds and payload only), so every layer can take a Settings.
"""

from __future__ import annotations

from dataclasses import dataclass

from shiftwork.core.bounds import seconds, whole
from shiftwork.core.errors import ConfigurationError
from shiftwork.core.payload import DEFAULT_MAX_PAYLOAD_BYTES, Limit


@dataclass(frozen=True)
class Settings:
    """Timings of the worker machinery (seconds) and limits on what jobs store (bytes)."""

    heartbeat_interval: float = 5.0  # one statement renews every lease a worker holds
    # A dead worker's jobs are rescued within about two heartbeat intervals: the lease
    # outlives one missed heartbeat, and every worker looks for expired leases often.
    lease_seconds: float = 10.0
    rescue_interval: float = 1.25
    poll_interval: float = 1.0  # fallback when no wake-up arrives
    leader_ttl: float = 15.0
    retention_finished: float = 24 * 3600.0  # succeeded / cancelled jobs kept this long
    retention_dead: float = 14 * 24 * 3600.0  # dead jobs kept this long
    prune_interval: float = 60.0
    # The history charts' five-minute buckets (observe/rollup.py) are kept this long.
    history_retention: float = 48 * 3600.0
    effect_retention: float = 30 * 24 * 3600.0  # ctx.once / tx.once keys kept this long
    claim_batch: int = 200  # most jobs one claim statement takes
    # While the database is out, a worker logs one line when it is lost, one per this many
    # seconds while it stays out, and one when it is back (worker/outage.py).
    outage_log_every: float = 30.0
    # PostgreSQL connection budget per process (docs/deploy.md, "Connections for a fleet"):
    # the pool keeps pool_min_size connections, grows up to App(pool_size=) under load and
    # closes one connection idle for pool_max_idle seconds at a time; the wake-up listener
    # is one more. An idle worker process so holds pool_min_size + 1.
    pool_min_size: int = 1
    pool_max_idle: float = 30.0
    # The longest hold ctx.rate_limited(retry_after=...) puts on a task's rate limit;
    # a longer one is cut to it and logged (a partner's Retry-After is not trusted).
    max_retry_after: float = 3600.0
    # Limits on every stored blob, checked before the write (PayloadTooLargeError names
    # the field, its size and the setting); sizes are bytes of compact JSON.
    max_args_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES  # a job's arguments (and its meta)
    max_checkpoint_bytes: int = 256 * 1024
    max_result_bytes: int = 1024 * 1024  # a job's return value and ctx.once results
    max_progress_message_bytes: int = 1024
    max_step_result_bytes: int = 1024 * 1024  # one workflow step's result
    max_event_payload_bytes: int = 256 * 1024  # an event's payload, and an update's request
    max_workflow_state_bytes: int = 64 * 1024  # one key a workflow publishes (wf.set_state)
    # A workflow stream (wf.write_stream): how many values one key holds, and each one's size.
    max_stream_values: int = 10_000
    max_stream_value_bytes: int = 64 * 1024
    max_unique_key_bytes: int = 1024  # PostgreSQL indexes keys only up to ~2.7 kB
    max_json_depth: int = 64  # nesting of lists and objects in any of the above
    # What a job logs while it runs is kept per attempt up to this many records and bytes
    # (the rest counted in one line); 0 records: nothing kept (worker/job_logs.py).
    job_log_lines: int = 1000
    job_log_bytes: int = 64 * 1024
    # The jobs table's own health (observe/table_health.py; docs/observability.md, "The
    # jobs table's health"): over a warning threshold `shiftwork health` warns (exit 0), over an
    # unhealthy one it fails (exit 1). Dead tuples are a share of all the table's tuples,
    # judged only from table_dead_min dead ones (a small table's churn is no alarm).
    table_dead_ratio_warning: float = 0.2
    table_dead_ratio_unhealthy: float = 0.5
    table_dead_min: int = 10_000
    # The oldest transaction holding the xmin horizon back (so vacuum cannot clean what
    # died after it began), by its age in seconds and, for every holder (replication
    # slots have no start time), in transactions.
    # Warning at 60 s: a held horizon is what starts a busy queue's collapse (the soak, at
    # 2,000 jobs/s, fell behind 90 s into one; docs/performance.md, "Soak").
    xmin_age_warning: float = 60.0
    xmin_age_unhealthy: float = 3600.0
    xmin_xids_warning: int = 10_000_000
    xmin_xids_unhealthy: int = 100_000_000  # half of autovacuum_freeze_max_age's default
    # An index's estimated wasted share, judged only from index_bloat_min_bytes of size.
    index_bloat_warning: float = 0.5
    index_bloat_min_bytes: int = 64 * 1024 * 1024
    # SQLite: the share of the file on the freelist (from sqlite_min_bytes of file) and
    # the -wal file's size (a reader that never ends keeps checkpoints from restarting it).
    sqlite_free_ratio_warning: float = 0.5
    sqlite_min_bytes: int = 64 * 1024 * 1024
    sqlite_wal_bytes_warning: int = 1024 * 1024 * 1024
    # A metrics scrape (and the dashboard) reads the table's health at most this often.
    table_health_every: float = 30.0

    def __post_init__(self) -> None:
        if isinstance(self.pool_min_size, bool) or not isinstance(self.pool_min_size, int) \
                or self.pool_min_size < 0:
            raise ConfigurationError(f"Settings.pool_min_size must be a whole number >= 0, "
                                     f"got {self.pool_min_size!r}")
        if not self.pool_max_idle > 0:
            raise ConfigurationError(f"Settings.pool_max_idle must be > 0 seconds, "
                                     f"got {self.pool_max_idle!r}")
        for name in _TIMINGS:  # leases and retentions reach the database as intervals
            seconds(getattr(self, name), f"Settings.{name}",
                    allow_zero=name.startswith("retention"))
        whole(self.claim_batch, "Settings.claim_batch", 1, 100_000)
        whole(self.job_log_lines, "Settings.job_log_lines", 0, 1_000_000)
        whole(self.job_log_bytes, "Settings.job_log_bytes", 1024, 64 * 1024 * 1024)
        for name in _RATIOS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not 0 < value <= 1:
                raise ConfigurationError(f"Settings.{name} must be a share in (0, 1], "
                                         f"got {value!r}")
        for name in _COUNTS:
            whole(getattr(self, name), f"Settings.{name}", 0, 2**62)
        for low, high in _PAIRS:
            if getattr(self, low) > getattr(self, high):
                raise ConfigurationError(f"Settings.{low} ({getattr(self, low)!r}) must not be "
                                         f"over Settings.{high} ({getattr(self, high)!r})")
        for name in _LIMITS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigurationError(f"Settings.{name} must be a whole number >= 1, "
                                         f"got {value!r}")

    def limit(self, setting: str) -> Limit:
        """The limit set by ``setting`` (e.g. ``"max_result_bytes"``), for encode_json."""
        return Limit(setting, getattr(self, setting), self.max_json_depth)


_TIMINGS = ("heartbeat_interval", "lease_seconds", "rescue_interval", "poll_interval",
            "leader_ttl", "retention_finished", "retention_dead", "prune_interval",
            "history_retention", "effect_retention", "max_retry_after", "outage_log_every",
            "xmin_age_warning", "xmin_age_unhealthy", "table_health_every")
_RATIOS = ("table_dead_ratio_warning", "table_dead_ratio_unhealthy", "index_bloat_warning",
           "sqlite_free_ratio_warning")
_COUNTS = ("table_dead_min", "xmin_xids_warning", "xmin_xids_unhealthy",
           "index_bloat_min_bytes", "sqlite_min_bytes", "sqlite_wal_bytes_warning")
_PAIRS = (("table_dead_ratio_warning", "table_dead_ratio_unhealthy"),
          ("xmin_age_warning", "xmin_age_unhealthy"),
          ("xmin_xids_warning", "xmin_xids_unhealthy"))
_LIMITS = ("max_args_bytes", "max_checkpoint_bytes", "max_result_bytes",
           "max_progress_message_bytes", "max_step_result_bytes", "max_event_payload_bytes",
           "max_workflow_state_bytes", "max_stream_values", "max_stream_value_bytes",
           "max_unique_key_bytes", "max_json_depth")
