"""What SQLite's own drivers use of its core (``SQLiteStore``): a connection per thread,
write transactions and the clock's instant."""

from __future__ import annotations

import sqlite3
from contextlib import AbstractContextManager
from typing import Any, Protocol

from shiftwork.store.core import EngineCore


class SQLiteCore(EngineCore, Protocol):
    """The SQLite engine core, as its drivers see it."""

    path: str

    @property
    def conn(self) -> sqlite3.Connection:
        """This thread's connection (opened on first use)."""
        ...

    def _tx(self, conn: Any = None, immediate: bool = True
            ) -> AbstractContextManager[sqlite3.Connection]:
        """A write transaction (BEGIN IMMEDIATE); ``conn``: the caller's, as is."""
        ...

    def _now(self) -> float:
        """The clock's instant as SQLite stores it (seconds since the epoch)."""
        ...
