"""One life cycle for every background service: start, stop (safe twice), a loop."""

from __future__ import annotations

import logging
import threading
from typing import Protocol

from shiftwork.core.errors import StorageError

log = logging.getLogger("shiftwork.worker")


class OutageLog(Protocol):
    """Where a service tells a failed tick (worker/outage.py's ``OutageLog``)."""

    def now(self) -> float: ...

    def failed(self, exc: Exception, what: str, started: float | None = None) -> None: ...

    def ok(self) -> None: ...


class Lifecycle(Protocol):
    """What a worker does with each of its background parts: start, and stop (safe twice)."""

    name: str

    def start(self) -> None: ...

    def stop(self, timeout: float = 5.0) -> None: ...


class Service:
    """A thread that calls :meth:`tick` every ``interval`` seconds until stopped."""

    name = "service"
    #: Where a tick that fails for want of the database says so (the worker sets it):
    #: in a few lines per outage, not a traceback per tick.
    outage: OutageLog | None = None

    def __init__(self, interval: float) -> None:
        self.interval = interval
        #: Set by a tick to wait this long before the next one, once, instead of interval.
        self.next_wait: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name=f"shiftwork-{self.name}",
                                            daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            started = self.outage.now() if self.outage is not None else None
            try:
                self.tick()  # (a tick may not touch the database: no sign that it is back)
            except StorageError as exc:
                if self.outage is not None:
                    self.outage.failed(exc, self.name, started)
                else:
                    log.warning("%s failed (%s); will try again in %.1fs", self.name, exc,
                                self.interval)
            except Exception:
                log.exception("%s failed; will try again in %.1fs", self.name, self.interval)
            wait, self.next_wait = self.next_wait, None
            self._stop.wait(self.interval if wait is None else max(wait, 0.0))

    def tick(self) -> None:
        raise NotImplementedError
