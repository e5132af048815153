"""Wake-ups: LISTEN/NOTIFY on PostgreSQL, ``PRAGMA data_version`` on SQLite.

Either way a missed wake-up only costs latency: producers also poll.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger("shiftwork.worker.notifier")

SQLITE_POLL_BUSY = 0.001  # seconds between data_version reads while work arrives
SQLITE_POLL_IDLE = 0.005
SQLITE_BUSY_SECONDS = 1.0


class Notifier:
    name = "notifier"

    def __init__(self, store: Any, wake: Callable[[str], None]) -> None:
        self.store = store
        self.wake = wake
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="shiftwork-notifier", daemon=True)
        self.ready = threading.Event()

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 3.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        if self.store.engine == "postgres":
            self._listen_postgres()
        else:
            self._watch_sqlite()

    def _listen_postgres(self) -> None:
        backoff = 0.5
        while not self._stop.is_set():
            try:
                conn = self.store.connect_listener()
            except Exception as exc:
                log.warning("cannot LISTEN (%s); polling until it works, retry in %.1fs",
                            exc, backoff)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 10.0)
                continue
            backoff = 0.5
            try:
                with conn:
                    conn.execute(f'LISTEN "{self.store.channel}"')
                    self.ready.set()
                    while not self._stop.is_set():
                        for note in conn.notifies(timeout=0.5):
                            self.wake(note.payload)
            except Exception as exc:
                if not self._stop.is_set():
                    log.warning("LISTEN connection lost (%s); reconnecting", exc)
                    self.wake("*")  # something may have been missed

    def _watch_sqlite(self) -> None:
        # data_version changes when any other connection commits: a cheap, local signal.
        # Polled every millisecond for a second after the last change (work is arriving),
        # every 5 ms when quiet: pickup within ~1 ms, and ~200 cheap reads a second idle.
        last = self.store.data_version()
        changed_at = time.monotonic()
        self.ready.set()
        while not self._stop.is_set():
            busy = time.monotonic() - changed_at < SQLITE_BUSY_SECONDS
            time.sleep(SQLITE_POLL_BUSY if busy else SQLITE_POLL_IDLE)
            try:
                current = self.store.data_version()
            except Exception:
                continue
            if current != last:
                last = current
                changed_at = time.monotonic()
                self.wake("*")
