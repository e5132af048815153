"""The worker's wake-up thread: listens through ``Store.wakeups_listen`` (store/wakeups.py)
and wakes the producers; opens the listener again, with backoff, when it fails.

Either way a missed wake-up only costs latency: producers also poll.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from shiftwork.core.backoff import Retrying
from shiftwork.core.errors import StorageError
from shiftwork.core.service import ThreadService
from shiftwork.store.wakeups import ANY_QUEUE

if TYPE_CHECKING:
    from shiftwork.store.base import Store
    from shiftwork.worker.outage import OutageLog

log = logging.getLogger("shiftwork.worker.notifier")

RETRY_FIRST = 0.5  # seconds before opening a listener again; doubles up to RETRY_MOST
RETRY_MOST = 10.0


class Notifier(ThreadService):
    name = "notifier"

    def __init__(self, store: Store, wake: Callable[[str], None],
                 outage: OutageLog | None = None) -> None:
        super().__init__()
        self.store = store
        self.wake = wake
        self.outage = outage  # where a lost database is said (worker/outage.py)
        self.ready = threading.Event()  # listening (or known to have nothing to listen on)

    def stop(self, timeout: float = 3.0) -> None:
        super().stop(timeout)

    def run(self) -> None:
        retrying = Retrying(RETRY_FIRST, RETRY_MOST)
        while not self._stop.is_set():
            try:
                listener = self.store.wakeups_listen()
            except StorageError as exc:  # the database is out: one story (worker/outage.py)
                backoff = retrying.next_delay()
                if self.outage is not None:
                    self.outage.failed(exc, "listening for wake-ups")
                else:
                    log.warning("cannot listen for wake-ups (%s); polling until it works, "
                                "retry in %.1fs", exc, backoff)
                self._stop.wait(backoff)
                continue
            except Exception as exc:
                backoff = retrying.next_delay()
                log.warning("cannot listen for wake-ups (%s); polling until it works, "
                            "retry in %.1fs", exc, backoff)
                self._stop.wait(backoff)
                continue
            retrying.reset()
            if self.outage is not None:
                self.outage.ok()
            if listener is None:  # nothing to listen on (behind PgBouncer): producers poll
                log.info("no wake-up listener (PgBouncer without listen_dsn): producers "
                         "find work by polling (Settings.poll_interval)")
                self.ready.set()
                self._stop.wait()
                return
            try:
                with listener:
                    self.ready.set()
                    for queue in listener.receive(self._stop):
                        self.wake(queue)
            except Exception as exc:
                if not self._stop.is_set():
                    if self.outage is not None:  # the listener's connection went with it
                        self.outage.failed(exc, "wake-up listener")
                    else:
                        log.warning("wake-up listener lost (%s); listening again", exc)
                    self.wake(ANY_QUEUE)  # something may have been missed
