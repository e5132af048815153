"""task.using(session=...) with real SQLAlchemy: the job joins the session's transaction,
for a sync Session and an AsyncSession, on SQLite (sqlite3, aiosqlite) and PostgreSQL
(psycopg 3): a rollback leaves no job, a commit leaves one, with the row beside it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import Column, Integer, MetaData, Table, create_engine, select
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine
from sqlalchemy.orm import Session

from shiftwork import App, ConfigurationError
from shiftwork.testing import enqueued


def _url(db: dict[str, str], *, asyncio_driver: bool = False) -> str:
    dsn = db["dsn"]
    if dsn.startswith("sqlite"):
        return dsn.replace("sqlite://", "sqlite+aiosqlite://") if asyncio_driver else dsn
    return dsn.replace("postgresql://", "postgresql+psycopg://", 1)


def _orders(db: dict[str, str]) -> Table:
    schema = None if db["dsn"].startswith("sqlite") else db["schema"]
    return Table("orders", MetaData(schema=schema), Column("id", Integer, primary_key=True))


def test_a_sync_session_commits_or_rolls_back_its_job(db: dict[str, str],
                                                      make_app: Any) -> None:
    app: App = make_app()

    @app.task
    def receipt(order_id: int) -> None: ...

    orders = _orders(db)
    engine = create_engine(_url(db))
    orders.metadata.create_all(engine)
    try:
        with Session(engine) as session:
            session.execute(orders.insert().values(id=1))
            receipt.using(session=session).enqueue(1)
            session.rollback()
        assert enqueued(app, receipt) == []
        with Session(engine) as session, session.begin():
            session.execute(orders.insert().values(id=2))
            job = receipt.using(session=session).enqueue(2)
            assert enqueued(app, receipt) == []  # not committed yet: no one sees it
        [seen] = enqueued(app, receipt)
        assert seen.id == job.id and seen.args == [2]
        with Session(engine) as session:
            assert session.scalars(select(orders.c.id)).all() == [2]
            with pytest.raises(ConfigurationError, match="not both"):
                receipt.using(session=session, conn=object()).enqueue(3)
    finally:
        engine.dispose()


def test_an_async_session_commits_or_rolls_back_its_job(db: dict[str, str],
                                                        make_app: Any) -> None:
    app: App = make_app()

    @app.task
    def receipt(order_id: int) -> None: ...

    orders = _orders(db)
    sync_engine = create_engine(_url(db))
    orders.metadata.create_all(sync_engine)
    sync_engine.dispose()

    async def main() -> int:
        engine = create_async_engine(_url(db, asyncio_driver=True))
        try:
            async with AsyncSession(engine) as session:
                await session.execute(orders.insert().values(id=1))
                await receipt.using(session=session).enqueue_async(1)
                await session.rollback()
            assert enqueued(app, receipt) == []
            async with AsyncSession(engine) as session, session.begin():
                await session.execute(orders.insert().values(id=2))
                job = await receipt.using(session=session).enqueue_async(2)
            with pytest.raises(ConfigurationError, match="AsyncSession"):
                await receipt.using(session=object()).enqueue_async(3)
            return job.id
        finally:
            await engine.dispose()
            await app.aclose()

    job_id = asyncio.run(main())
    [seen] = enqueued(app, receipt)
    assert seen.id == job_id and seen.args == [2]


def test_a_session_on_another_driver_is_refused(tmp_path: Any) -> None:
    with pytest.raises(ConfigurationError, match="Session"):
        from shiftwork.contrib.sqlalchemy import session_connection
        session_connection(object())


def test_a_dedup_key_taken_in_a_session_is_taken_at_its_commit(db: dict[str, str],
                                                               make_app: Any) -> None:
    app: App = make_app()

    @app.task(unique=True, unique_for=600)
    def receipt(order_id: int) -> None: ...

    engine = create_engine(_url(db))
    try:
        with Session(engine) as session:
            receipt.using(session=session).enqueue(1)
            session.rollback()  # the key with it
        with Session(engine) as session, session.begin():
            first = receipt.using(session=session).enqueue(1)
            assert receipt.using(session=session).enqueue(1).id == first.id
        assert first.created and [j.id for j in enqueued(app, receipt)] == [first.id]
        assert receipt.enqueue(1).id == first.id
    finally:
        engine.dispose()
