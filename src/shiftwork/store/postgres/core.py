"""What PostgreSQL's own drivers use of its core (``PostgresStore``): the pool's
connections, the async pool's, the clock's parameters and the notify channels."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import Any, Protocol

import psycopg

from shiftwork.store.core import EngineCore


class PostgresCore(EngineCore, Protocol):
    """The PostgreSQL engine core, as its drivers see it."""

    #: The NOTIFY channels: queues with work, and finished jobs someone waits on.
    channel: str
    done_channel: str
    #: Server-side prepared statements (None behind a transaction pooler).
    _prepare: bool | None
    #: The schema's name, unquoted, and whether its jobs table is partitioned.
    schema: str
    partitioned: bool

    def find_layout(self, c: psycopg.Connection[Any]) -> bool:
        """Look the table layout up on ``c`` and load its statements; partitioned?"""
        ...

    def use_layout(self, partitioned: bool) -> None:
        """Load the statements for this layout."""
        ...

    def functions_sql(self) -> str:
        """The schema's functions (migrations/functions.sql) for the layout in use."""
        ...

    def _conn(self, conn: Any = None) -> AbstractContextManager[psycopg.Connection[Any]]:
        """A pooled autocommit connection (``conn``: the caller's, as is)."""
        ...

    def _aconn(self, conn: Any) -> AbstractAsyncContextManager[psycopg.AsyncConnection[Any]]:
        """An async pooled connection (``conn``: the caller's, as is)."""
        ...

    def _p(self, **params: Any) -> dict[str, Any]:
        """``params`` and the clock's instant (``now``; None: the server's)."""
        ...
