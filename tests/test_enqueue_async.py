"""enqueue_async: on Postgres an async connection pool of its own (no thread hop onto the
sync pool), opened by the first enqueue and closed by the lifespan; on SQLite a thread."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from shiftwork import App, PayloadError
from shiftwork.contrib.asgi import lifespan
from shiftwork.store.postgres.store import NOTIFY_CHANNEL_PREFIX
from shiftwork.store.wakeups import parse_wakeup
from shiftwork.testing import enqueued

from .conftest import PG_DSN, require_pg


def _no_sync_insert(app: App) -> None:
    """Make the sync insert path fail: what still enqueues went through the async one."""
    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("enqueue_async used the sync pool")
    if app.store.engine == "postgres":
        app.store.jobs.insert = refuse  # type: ignore[method-assign]
        app.store.jobs.insert_stream = refuse  # type: ignore[method-assign]


def test_enqueue_async_validates_and_inserts(make_app: Any) -> None:
    app: App = make_app()

    @app.task(queue="mail")
    def send(to: str, n: int = 1) -> None: ...

    async def main() -> list[Any]:
        _no_sync_insert(app)
        first = await send.enqueue_async("a@example.com")
        keyed = await send.using(key="k").enqueue_async("b@example.com", 2)
        again = await send.using(key="k").enqueue_async("c@example.com")  # key is held
        with pytest.raises(PayloadError):
            await send.enqueue_async(object())  # type: ignore[arg-type]
        many = await app.enqueue_many_async([send.call("d", 3), send.call("e", 4)])
        await app.aclose()
        return [first, keyed, again, many]

    first, keyed, again, many = asyncio.run(main())
    assert first.created and keyed.created and not again.created and again.id == keyed.id
    assert len(many) == 2 and all(r.created for r in many)
    assert sorted(j.args[0] for j in enqueued(app, send)) == ["a@example.com",
                                                             "b@example.com", "d", "e"]


@pytest.mark.parametrize("engine", ["postgres"])  # the async pool is Postgres's
def test_the_async_pool_opens_on_first_use_and_counts_in_the_budget(db: dict[str, str]
                                                                     ) -> None:
    require_pg()
    app = App(db["dsn"], schema=db["schema"], pool_size=3, async_pool_size=2)
    assert App("sqlite:///unused.db").connection_budget() is None  # SQLite: no pool
    app.migrate()

    @app.task
    def ping(n: int) -> None: ...

    assert app.connection_budget() == 5
    store: Any = app.store

    async def main() -> None:
        assert not store.async_pool_open  # lazily: nothing opened yet
        await asyncio.gather(*(ping.enqueue_async(n) for n in range(10)))
        assert store.async_pool_open
        stats = (await store.async_pool()).get_stats()
        assert stats["pool_max"] == 2 and stats["pool_size"] <= 2
        await app.aclose()
        assert not store.async_pool_open

    asyncio.run(main())
    assert len(enqueued(app, ping)) == 10
    app.close()


@pytest.mark.parametrize("engine", ["postgres"])  # an AsyncConnection is psycopg's
def test_enqueue_async_joins_an_async_connections_transaction(make_app: Any) -> None:
    require_pg()
    app: App = make_app()

    @app.task
    def ping(n: int) -> None: ...

    async def main() -> None:
        async with await psycopg.AsyncConnection.connect(PG_DSN) as conn:
            await ping.using(conn=conn).enqueue_async(1)
            await conn.rollback()
            await ping.using(conn=conn).enqueue_async(2)
            await conn.commit()
        await app.aclose()

    asyncio.run(main())
    assert [j.args for j in enqueued(app, ping)] == [[2]]


@pytest.mark.parametrize("engine", ["postgres"])
def test_the_lifespan_closes_the_async_pool(db: dict[str, str]) -> None:
    require_pg()
    app = App(db["dsn"], schema=db["schema"])

    @app.task
    def ping(n: int) -> None: ...

    async def main() -> None:
        async with lifespan(app, migrate=True)(None):
            await ping.enqueue_async(1)
            assert app.store.async_pool_open  # type: ignore[attr-defined]
        assert not app.store.async_pool_open  # type: ignore[attr-defined]

    asyncio.run(main())
    app.close()


def test_sync_and_async_enqueue_send_the_same_wakeups(make_app: Callable[..., App],
                                                     db: dict[str, str]) -> None:
    """What a listening process hears of jobs enqueued each way: one share of the queue
    per due job (``queue|count|token``), never the bare queue name that wakes them all."""
    if not db["dsn"].startswith("postgres") or db.get("pgbouncer"):
        pytest.skip("the LISTEN/NOTIFY payloads of PostgreSQL")
    app = make_app()

    @app.task(queue="q")
    def ping(n: int) -> None: ...

    @app.task(queue="q", unique=True)
    def keyed(n: int) -> None: ...

    def heard(enqueue: Callable[[], object]) -> list[tuple[str, int | None]]:
        with psycopg.connect(PG_DSN, autocommit=True) as listener:
            listener.execute(f'LISTEN "{NOTIFY_CHANNEL_PREFIX}{db["schema"]}"')
            enqueue()
            got = [parse_wakeup(n.payload)[:2] for n in listener.notifies(timeout=1.0)]
        return sorted(got, key=repr)

    async def one_async() -> None:
        try:
            await ping.enqueue_async(1)
        finally:
            await app.aclose()

    async def many_async() -> None:
        try:
            await app.enqueue_many_async([ping.call(i) for i in range(3)]
                                         + [keyed.call(i) for i in range(2)])
        finally:
            await app.aclose()

    one = [("q", 1)]
    assert heard(lambda: ping.enqueue(1)) == one
    assert heard(lambda: asyncio.run(one_async())) == one
    many = [("q", 5)]  # one payload for the batch: five shares
    assert heard(lambda: app.enqueue_many([ping.call(i) for i in range(3)]
                                          + [keyed.call(i + 10) for i in range(2)])) == many
    assert heard(lambda: asyncio.run(many_async())) == many
