"""One listener per host: the supervisor of ``shiftwork worker --processes N`` listens for
wake-ups (the one Notifier, so the same reopening with backoff) and passes every one, as
it came, to each of its children over the child's pipe.

Each child still decides for itself whether a wake-up is its own (worker/wake_share.py
ranks every live child among the workers serving the queue), so one enqueue still costs
about one claim; the relay only divides the listener connections, and the NOTIFY
deliveries, by the processes per host. On SQLite the supervisor's one watcher polls
``PRAGMA data_version`` for the children, which then poll nothing but their producers'
``poll_interval``.
"""

from __future__ import annotations

import logging
import threading
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from shiftwork.worker.notifier import Notifier

if TYPE_CHECKING:
    from shiftwork.store.base import Store

log = logging.getLogger("shiftwork.worker.supervisor")


class Link:
    """The supervisor's end of one child's pipe (the child has the other end): messages
    are tuples, ``(kind, *fields)``. Sent from two threads (the relay, the supervisor's
    loop), hence the lock; a child that has gone makes a send do nothing."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self._lock = threading.Lock()

    def send(self, *message: Any) -> bool:
        with self._lock:
            try:
                self.conn.send(message)
                return True
            except (OSError, ValueError):  # the child exited, or the pipe was closed
                return False

    def close(self) -> None:
        with self._lock:
            self.conn.close()


class Relay:
    """The host's listener, relaying each wake-up to every child's :class:`Link`."""

    name = "relay"

    def __init__(self, store: Store) -> None:
        self._links: list[Link] = []
        self._lock = threading.Lock()
        self.notifier = Notifier(store, self.broadcast)

    def add(self, link: Link) -> None:
        with self._lock:
            self._links = [*self._links, link]

    def remove(self, link: Link) -> None:
        with self._lock:
            self._links = [other for other in self._links if other is not link]

    def broadcast(self, payload: str) -> None:
        for link in self._links:  # replaced whole, never changed in place
            link.send("wake", payload)

    @property
    def started(self) -> threading.Event:
        return self.notifier.started

    def start(self) -> None:
        self.notifier.start()

    def stop(self, timeout: float = 5.0) -> None:
        self.notifier.stop(timeout)
