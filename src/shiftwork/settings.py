"""Settings: the timings of the worker machinery and the limits on what jobs store.

A bottom module (errors and payload only), so every layer can take a Settings.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import ConfigurationError
from .payload import DEFAULT_MAX_PAYLOAD_BYTES, Limit


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
    effect_retention: float = 30 * 24 * 3600.0  # ctx.once / tx.once keys kept this long
    claim_batch: int = 100  # most jobs one claim statement takes
    # PostgreSQL connection budget per process (docs/deploy.md, "Connections for a fleet"):
    # the pool keeps pool_min_size connections, grows up to App(pool_size=) under load and
    # closes one connection idle for pool_max_idle seconds at a time; the wake-up listener
    # is one more. An idle worker process so holds pool_min_size + 1.
    pool_min_size: int = 1
    pool_max_idle: float = 30.0
    # Limits on every stored blob, checked before the write (PayloadTooLargeError names
    # the field, its size and the setting); sizes are bytes of compact JSON.
    max_args_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES  # a job's arguments (and its meta)
    max_checkpoint_bytes: int = 256 * 1024
    max_result_bytes: int = 1024 * 1024  # a job's return value and ctx.once results
    max_progress_message_bytes: int = 1024
    max_step_result_bytes: int = 1024 * 1024  # one workflow step's result
    max_event_payload_bytes: int = 256 * 1024
    max_unique_key_bytes: int = 1024  # PostgreSQL indexes keys only up to ~2.7 kB
    max_json_depth: int = 64  # nesting of lists and objects in any of the above

    def __post_init__(self) -> None:
        if isinstance(self.pool_min_size, bool) or not isinstance(self.pool_min_size, int) \
                or self.pool_min_size < 0:
            raise ConfigurationError(f"Settings.pool_min_size must be a whole number >= 0, "
                                     f"got {self.pool_min_size!r}")
        if not self.pool_max_idle > 0:
            raise ConfigurationError(f"Settings.pool_max_idle must be > 0 seconds, "
                                     f"got {self.pool_max_idle!r}")
        for name in _LIMITS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigurationError(f"Settings.{name} must be a whole number >= 1, "
                                         f"got {value!r}")

    def limit(self, setting: str) -> Limit:
        """The limit set by ``setting`` (e.g. ``"max_result_bytes"``), for encode_json."""
        return Limit(setting, getattr(self, setting), self.max_json_depth)


_LIMITS = ("max_args_bytes", "max_checkpoint_bytes", "max_result_bytes",
           "max_progress_message_bytes", "max_step_result_bytes", "max_event_payload_bytes",
           "max_unique_key_bytes", "max_json_depth")
