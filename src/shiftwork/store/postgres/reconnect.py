"""How a pool gets its connections back after an outage or a failover: psycopg_pool's
attempt to replace a lost connection backs off (1, 2, 4, ... s), so it is given up after
``RECONNECT_GIVE_UP`` seconds and a fresh one started at once (its first try is immediate).

Giving up alone is not enough: the pool then makes a new attempt only when a thread asks
for a connection, and a worker's threads were all waiting in the pool already (up to its
timeout, 10 s). ``check()`` is psycopg_pool's public way to let an empty pool grow again.
"""

from __future__ import annotations

import contextlib
from typing import Any

from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolClosed

from shiftwork.store.connections import RECONNECT_GIVE_UP


def _again(pool: ConnectionPool[Any]) -> None:
    with contextlib.suppress(PoolClosed):  # closing: nothing to get back
        pool.check()  # empty: grows by one connection, tried at once


async def _again_async(pool: AsyncConnectionPool[Any]) -> None:
    with contextlib.suppress(PoolClosed):
        await pool.check()


def reconnect_options() -> dict[str, Any]:
    """The ConnectionPool arguments for it."""
    return {"reconnect_timeout": RECONNECT_GIVE_UP, "reconnect_failed": _again}


def async_reconnect_options() -> dict[str, Any]:
    """The AsyncConnectionPool arguments for it."""
    return {"reconnect_timeout": RECONNECT_GIVE_UP, "reconnect_failed": _again_async}
