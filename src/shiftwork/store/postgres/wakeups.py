"""PostgreSQL wake-ups: LISTEN on the schema's channel, on a connection of its own."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import psycopg

from shiftwork.store.wakeups import ClosingListener

#: How long one wait for notifications lasts before ``stop`` is looked at again.
WAIT_SECONDS = 0.5


class PostgresWakeListener(ClosingListener):
    def __init__(self, conn: psycopg.Connection[Any], channel: str) -> None:
        self._conn = conn
        try:
            conn.execute(f'LISTEN "{channel}"')
        except BaseException:
            conn.close()
            raise

    def receive(self, stop: threading.Event) -> Iterator[str]:
        while not stop.is_set():
            for note in self._conn.notifies(timeout=WAIT_SECONDS):
                yield note.payload

    def close(self) -> None:
        self._conn.close()
