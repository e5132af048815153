"""The PostgreSQL core's async connection pool (psycopg_pool.AsyncConnectionPool), for
enqueue from asyncio code (``store.jobs.insert_async``, postgres/jobs.py).

The pool opens on the first ``enqueue_async`` (inside the caller's event loop: an async
pool belongs to one loop) and is closed by :meth:`aclose`, which the ASGI lifespan helper
calls at shutdown. Only the enqueue path is async: everything else stays on the sync pool.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from shiftwork.core.errors import CommitUnknownError, StorageError
from shiftwork.core.redact import describe_dsn
from shiftwork.store.postgres.connect_errors import libpq_text, lost_reply, read_only
from shiftwork.store.postgres.reconnect import async_reconnect_options


class PostgresAsyncPool:
    """The async pool of :class:`PostgresStore` (a mixin of the core: its DSN and options)."""

    dsn: str
    _connect_timeout: float
    async_pool_size: int
    _apool: AsyncConnectionPool | None = None
    _apool_lock: asyncio.Lock | None = None

    _connect_kwargs: Callable[..., dict[str, Any]]  # the store's (PgBouncer, application_name)

    async def async_pool(self) -> AsyncConnectionPool:
        """The async pool, opened on first use in the running event loop."""
        if self._apool is None:
            if self._apool_lock is None:
                self._apool_lock = asyncio.Lock()
            async with self._apool_lock:
                if self._apool is None:
                    pool = AsyncConnectionPool(
                        self.dsn, min_size=1, max_size=self.async_pool_size, open=False,
                        kwargs={"autocommit": True, **self._connect_kwargs()},
                        timeout=self._connect_timeout + 5, name="shiftwork-async",
                        **async_reconnect_options())
                    try:
                        await pool.open(wait=True, timeout=self._connect_timeout + 1)
                    except Exception as exc:
                        await pool.close()
                        raise StorageError(f"cannot connect to PostgreSQL at "
                                           f"{describe_dsn(self.dsn)}: {libpq_text(exc)}"
                                           ) from exc
                    self._apool = pool
        return self._apool

    @property
    def async_pool_open(self) -> bool:
        return self._apool is not None

    async def aclose(self) -> None:
        """Close the async pool (a later enqueue_async opens a new one)."""
        pool, self._apool, self._apool_lock = self._apool, None, None
        if pool is not None:
            await pool.close()

    @asynccontextmanager
    async def _aconn(self, conn: Any) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        if conn is not None:  # the caller's connection: its transaction is theirs
            yield conn
            return
        pool = await self.async_pool()
        try:
            async with pool.connection() as c:
                try:
                    yield c
                except psycopg.OperationalError as exc:
                    if c.broken:  # sent, and the reply never came: it may have committed
                        raise lost_reply(describe_dsn(self.dsn), exc) from exc
                    raise
                except psycopg.errors.ReadOnlySqlTransaction as exc:
                    await c.close()  # a standby: the pool discards it and connects anew
                    raise read_only(describe_dsn(self.dsn), exc) from exc
        except CommitUnknownError:
            raise
        except psycopg.OperationalError as exc:
            raise StorageError(f"PostgreSQL at {describe_dsn(self.dsn)}: {exc}") from exc
