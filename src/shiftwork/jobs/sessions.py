"""Joining a SQLAlchemy session's transaction (``task.using(session=s)``): the DBAPI
connection under a Session or an AsyncSession, on which the insert pipeline writes.
Public as :mod:`shiftwork.contrib.sqlalchemy`."""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from shiftwork.core.errors import ConfigurationError

if TYPE_CHECKING:
    from shiftwork.model.records import EnqueueResult

#: Inserts on a driver connection: the pipeline's (jobs/enqueue.py), which calls in here.
SyncInsert = Callable[[Any], list["EnqueueResult"]]
AsyncInsert = Callable[[Any], Awaitable[list["EnqueueResult"]]]

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


async def enqueue_in_async_session(session: Any, insert_async: AsyncInsert,
                                   insert_sync: SyncInsert) -> list[EnqueueResult]:
    """Insert on an ``AsyncSession``'s connection, in its transaction: ``insert_async``
    on a psycopg one, ``insert_sync`` on aiosqlite's sqlite3 one (in its thread)."""
    if not hasattr(session, "sync_session"):
        raise ConfigurationError(
            f"enqueue_async with using(session=...) needs a SQLAlchemy AsyncSession, "
            f"got {type(session).__name__}")
    raw = await (await session.connection()).get_raw_connection()
    driver = raw.driver_connection
    if _is_psycopg(driver, sync=False):
        return await insert_async(driver)
    inner = getattr(driver, "_conn", None)  # aiosqlite: a sqlite3 connection in its thread
    if isinstance(inner, sqlite3.Connection) and hasattr(driver, "_execute"):
        # Run where aiosqlite runs everything on that connection: its own thread.
        result: list[EnqueueResult] = await driver._execute(insert_sync, inner)
        return result
    raise ConfigurationError(f"the session's driver connection is a "
                             f"{type(driver).__module__}.{type(driver).__name__}: {_DRIVERS}")


def _is_psycopg(driver: Any, *, sync: bool) -> bool:
    try:
        import psycopg
    except ImportError:
        return False
    return isinstance(driver, psycopg.Connection if sync else psycopg.AsyncConnection)
