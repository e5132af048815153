"""The engine core: what the area drivers (``store.jobs``, ``store.deps``, ``store.fleet``...)
use of their engine, and nothing else.

Each engine's store (``PostgresStore``, ``SQLiteStore``) is its core: it holds the
connections, the named queries and the clock, and builds the drivers on itself. The
primitives here are what the Python written once (store/jobs.py, store/deps.py,
store/fleet.py, store/long_jobs.py, store/console.py) runs its statements with; each
engine's own drivers use its core's wider Protocol (postgres/core.py, sqlite/core.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from shiftwork.core.clock import Clock


@runtime_checkable
class EngineCore(Protocol):
    """An engine's connections, named queries and clock, as the shared drivers see them."""

    engine: str  # "sqlite" or "postgres"
    #: The named queries of the engine's ``*.sql`` files, by name.
    q: dict[str, str]
    clock: Clock
    @property
    def _unique_violation(self) -> type[Exception]:
        """The driver's error for a unique index violated (another job holds the key)."""
        ...

    def _session(self, conn: Any = None) -> AbstractContextManager[Any]:
        """A connection for a few fenced writes (``conn``: the caller's, as is).

        SQLite: one write transaction (BEGIN IMMEDIATE). PostgreSQL: autocommit
        statements, each fenced in its SQL by state and attempt.
        """
        ...

    def _one(self, c: Any, query: str, **params: Any) -> Sequence[Any] | None:
        """Run a named query on ``c`` (the engine adds the clock's instant); its first row."""
        ...

    def _rows(self, c: Any, query: str, **params: Any) -> list[Any]:
        """Run a named query on ``c`` (lists as the engine passes arrays); all its rows."""
        ...

    def _notify(self, c: Any, queues: list[str]) -> None:
        """Wake the workers of ``queues`` (``"*"``: all), if the engine needs telling."""
        ...

    def _read(self, sql: str, params: dict[str, Any], jobs: bool = False) -> list[Any]:
        """Rows of ``sql`` (a query's text) outside any write transaction; as ``Job``
        with ``jobs``."""
        ...

    def _reader(self) -> AbstractContextManager[Any]:
        """A connection for reads (SQLite: no write transaction)."""
        ...

    def _instant(self, value: Any) -> datetime | None:
        """An instant column as the engine returns it, as an aware datetime."""
        ...

    def transaction(self) -> AbstractContextManager[Any]:
        """A native connection in a transaction: commits on exit, rolls back on error."""
        ...
