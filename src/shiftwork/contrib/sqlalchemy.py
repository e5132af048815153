"""Enqueue inside a SQLAlchemy session's transaction: ``task.using(session=s).enqueue(...)``.

The jobs are inserted on the session's own database connection, so they exist if and only
if the session commits. The session must be on the App's database: PostgreSQL through
psycopg 3 (``postgresql+psycopg://``), or the App's SQLite file (``sqlite://``, and
``sqlite+aiosqlite://`` for an AsyncSession).

>>> with Session(engine) as session, session.begin():
...     session.add(Order(id=7))
...     send_receipt.using(session=session).enqueue(7)   # committed with the order

>>> async with AsyncSession(engine) as session, session.begin():
...     await send_receipt.using(session=session).enqueue_async(7)
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from shiftwork.core.errors import ConfigurationError
from shiftwork.jobs.enqueue import enqueue_requests, enqueue_requests_async

if TYPE_CHECKING:
    from shiftwork.jobs.task import JobRequest
    from shiftwork.model.records import EnqueueResult
    from shiftwork.runtime import Runtime

_DRIVERS = ("shiftwork joins the transaction of a psycopg 3 connection "
            "(postgresql+psycopg://) or of a sqlite3 one (sqlite://, sqlite+aiosqlite://)")


def session_connection(session: Any) -> Any:
    """The DBAPI connection under a sync ``Session`` (its transaction begins if it has
    not yet): a ``psycopg.Connection`` or a ``sqlite3.Connection``."""
    if not hasattr(session, "connection") or hasattr(session, "sync_session"):
        raise ConfigurationError(
            f"using(session=...) needs a SQLAlchemy Session, got {type(session).__name__}"
            + (" (an AsyncSession: use enqueue_async)" if hasattr(session, "sync_session")
               else ""))
    driver = session.connection().connection.driver_connection
    if isinstance(driver, sqlite3.Connection) or _is_psycopg(driver, sync=True):
        return driver
    raise ConfigurationError(f"the session's driver connection is a "
                             f"{type(driver).__module__}.{type(driver).__name__}: {_DRIVERS}")


async def enqueue_in_async_session(rt: Runtime, requests: Iterable[JobRequest],
                                   session: Any) -> list[EnqueueResult]:
    """Insert ``requests`` on an ``AsyncSession``'s connection, in its transaction."""
    if not hasattr(session, "sync_session"):
        raise ConfigurationError(
            f"enqueue_async with using(session=...) needs a SQLAlchemy AsyncSession, "
            f"got {type(session).__name__}")
    raw = await (await session.connection()).get_raw_connection()
    driver = raw.driver_connection
    if _is_psycopg(driver, sync=False):
        return await enqueue_requests_async(rt, requests, conn=driver)
    inner = getattr(driver, "_conn", None)  # aiosqlite: a sqlite3 connection in its thread
    if isinstance(inner, sqlite3.Connection) and hasattr(driver, "_execute"):
        # Run where aiosqlite runs everything on that connection: its own thread.
        result: list[EnqueueResult] = await driver._execute(enqueue_requests, rt,
                                                            list(requests), inner)
        return result
    raise ConfigurationError(f"the session's driver connection is a "
                             f"{type(driver).__module__}.{type(driver).__name__}: {_DRIVERS}")


def _is_psycopg(driver: Any, *, sync: bool) -> bool:
    try:
        import psycopg
    except ImportError:
        return False
    return isinstance(driver, psycopg.Connection if sync else psycopg.AsyncConnection)
