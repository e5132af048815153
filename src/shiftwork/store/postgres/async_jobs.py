"""Enqueue from asyncio code on an async connection pool (psycopg_pool.AsyncConnectionPool).

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
from shiftwork.model.new_job import NewJob
from shiftwork.model.records import EnqueueResult
from shiftwork.store.postgres.connect_errors import libpq_text, lost_reply, read_only
from shiftwork.store.postgres.keyed import keys_taken, settle_keys
from shiftwork.store.postgres.reconnect import async_reconnect_options
from shiftwork.store.wakeups import due_wakeup, due_wakeups


class PostgresAsyncJobs:
    """The async enqueue of :class:`PostgresStore` (a mixin: it uses the store's queries)."""

    dsn: str
    channel: str
    q: dict[str, str]
    _connect_timeout: float
    async_pool_size: int
    _apool: AsyncConnectionPool | None = None
    _apool_lock: asyncio.Lock | None = None

    _p: Callable[..., dict[str, Any]]  # the store's: parameters plus the clock's "now"
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

    async def jobs_insert_async(self, jobs: list[NewJob], conn: Any = None
                                ) -> list[EnqueueResult]:
        """:meth:`jobs_insert` on the async pool, or in ``conn``'s transaction (a
        ``psycopg.AsyncConnection``): the same statements as the sync path."""
        if not jobs:
            return []
        if len(jobs) == 1 and not jobs[0].unique_key:
            j = jobs[0]
            async with self._aconn(conn) as c:
                cur = await c.execute(self.q["jobs_insert_one"], self._p(
                    queue=j.queue, task=j.task, args=j.args_json, priority=j.priority,
                    max_attempts=j.max_attempts, run_at=j.run_at, timeout=j.timeout,
                    meta=j.meta_json, channel=self.channel,
                    notify=due_wakeup(j)))
                one = await cur.fetchone()
            assert one is not None
            return [EnqueueResult(one[0], True)]
        params = self._p(
            tasks=[j.task for j in jobs], queues=[j.queue for j in jobs],
            args=[j.args_json for j in jobs], priorities=[j.priority for j in jobs],
            max_attempts=[j.max_attempts for j in jobs], run_ats=[j.run_at for j in jobs],
            unique_keys=[j.unique_key for j in jobs], timeouts=[j.timeout for j in jobs],
            metas=[j.meta_json for j in jobs])
        wakeups = due_wakeups(jobs)  # the sync insert's: one share per due job
        for _ in range(5):
            async with self._aconn(conn) as c, c.transaction():
                rows = await (await c.execute(self.q["jobs_insert"], params)).fetchall()
                missing = keys_taken(jobs, rows)
                found = await (await c.execute(self.q["jobs_find_active_by_keys"],
                                               {"keys": missing})).fetchall() if missing else []
                results = settle_keys(jobs, rows, missing, found)
                if results is None:
                    continue  # a key's holder finished between insert and lookup
                if wakeups:
                    await c.execute(self.q["jobs_notify"],
                                    {"channel": self.channel, "queues": wakeups})
                return results
        raise StorageError("could not settle unique keys after 5 tries; the key is contended")
