"""What an engine supplies to the Python written once in store/jobs.py and store/long_jobs.py.

Three primitives over the engine's named queries (its ``*.sql`` files); the SQL and the
driver stay in the engine's package, the deciding in the shared modules.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any


class EngineSql:
    """Mixed into each engine's store class, which implements the three methods."""

    def _session(self, conn: Any = None) -> AbstractContextManager[Any]:
        """A connection for a few fenced writes (``conn``: the caller's, as is).

        SQLite: one write transaction (BEGIN IMMEDIATE). PostgreSQL: autocommit
        statements, each fenced in its SQL by state and attempt.
        """
        raise NotImplementedError

    def _one(self, c: Any, query: str, **params: Any) -> Sequence[Any] | None:
        """Run a named query on ``c`` (the engine adds the clock's instant); its first row."""
        raise NotImplementedError

    def _notify(self, c: Any, queues: list[str]) -> None:
        """Wake the workers of ``queues`` (``"*"``: all), if the engine needs telling."""
        raise NotImplementedError
