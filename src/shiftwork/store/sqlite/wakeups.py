"""SQLite wake-ups: ``PRAGMA data_version`` changes whenever another connection commits.

A cheap, local signal, polled every millisecond for a second after the last change (work
is arriving), every 5 ms when quiet: pickup within ~1 ms, ~200 cheap reads a second idle.
"""

from __future__ import annotations

import sqlite3
import threading

# Real time, not the runtime's clock: how often the file is polled.
import time
from collections.abc import Iterator

from shiftwork.store.wakeups import ANY_QUEUE, ClosingListener

POLL_BUSY = 0.001  # seconds between data_version reads while work arrives
POLL_IDLE = 0.005
BUSY_SECONDS = 1.0


class DataVersionWatcher(ClosingListener):
    """Reads ``data_version`` on a connection of its own, opened (and its baseline read)
    when the listener is made: a commit after that is never missed."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._last = self._read()

    def _read(self) -> int:
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def receive(self, stop: threading.Event) -> Iterator[str]:
        changed_at = time.monotonic()
        while not stop.is_set():
            busy = time.monotonic() - changed_at < BUSY_SECONDS
            time.sleep(POLL_BUSY if busy else POLL_IDLE)
            try:
                current = self._read()
            except Exception:
                continue  # a busy or locked file: read again on the next poll
            if current != self._last:
                self._last = current
                changed_at = time.monotonic()
                yield ANY_QUEUE

    def close(self) -> None:
        self._conn.close()
