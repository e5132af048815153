"""How a process connects to PostgreSQL: its pool's bounds, and what a transaction pooler
(PgBouncer in transaction mode) in front of the server rules out.

Engine-neutral on purpose (no psycopg here): ``open_store`` takes one, SQLite ignores it.
docs/deploy.md, "Connections for a fleet", gives the budget this adds up to.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from shiftwork.core.errors import ConfigurationError

#: How long a pool's attempt to replace a lost connection lasts, seconds. psycopg_pool
#: doubles the delay between tries until its ``reconnect_timeout`` (300 s), so after a
#: 15 s failover a worker found the new primary 11 s after it was up
#: (tests/test_failover.py). Each PostgreSQL pool gives an attempt up after this and
#: starts a fresh one at once (``store/postgres/reconnect.py``): a try about every second
#: while the server is away, and the server coming back is seen within about a second.
RECONNECT_GIVE_UP = 2.0


@dataclass(frozen=True)
class Connections:
    pool_size: int = 10  # the most connections the pool opens under load
    pool_min_size: int = 1  # kept open while idle
    pool_max_idle: float = 30.0  # an idle connection above the minimum closes after this
    #: Through a transaction pooler: no server-side prepared statements (PgBouncer before
    #: 1.21 cannot route them) and no LISTEN on ``dsn`` (see ``listen_dsn``).
    pgbouncer: bool = False
    #: Where the wake-up listener connects (a direct server address when ``dsn`` goes
    #: through PgBouncer). None: ``dsn`` itself, except behind PgBouncer, where workers
    #: then poll (``Settings.poll_interval`` is the pickup latency).
    listen_dsn: str | None = None

    def __post_init__(self) -> None:
        if self.pool_size < 1:
            raise ConfigurationError(f"pool_size must be >= 1, got {self.pool_size!r}")
        if not 0 <= self.pool_min_size <= self.pool_size:
            raise ConfigurationError(
                f"Settings.pool_min_size must be between 0 and pool_size ({self.pool_size}), "
                f"got {self.pool_min_size!r}")

    @property
    def listens(self) -> bool:
        """Whether wake-ups come by LISTEN (else only by polling)."""
        return self.listen_dsn is not None or not self.pgbouncer


def application_name(role: str = "") -> str:
    """The name each connection shows in pg_stat_activity, so a fleet's connections can be
    counted per process: ``shiftwork:<pid>`` (``:listen`` for the wake-up listener)."""
    return f"shiftwork:{os.getpid()}" + (f":{role}" if role else "")
