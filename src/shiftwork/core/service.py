"""One life cycle for every background service: start and stop (each safe twice), a
started signal; a thread with a body, or one that ticks."""

from __future__ import annotations

import logging
import random
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
    """What a worker does with each of its background parts: start and stop (each safe
    twice, stop also before start); ``started`` is set once the part runs."""

    name: str
    started: threading.Event

    def start(self) -> None: ...

    def stop(self, timeout: float = 5.0) -> None: ...


class LeaderTerm(Protocol):
    """What a leader-only service reads (the worker's Leader): the term this worker
    holds, while fresh, else None."""

    @property
    def term(self) -> int | None: ...


class ThreadService:
    """A background thread with the one life cycle every part of a worker shares.

    :meth:`start` runs :meth:`run` on a daemon thread named ``shiftwork-<name>``; a second
    start, or a start after a stop, does nothing. :meth:`stop` asks the body to end (sets
    :attr:`stopping`, then calls :meth:`interrupt` once, for a body blocked elsewhere than
    on the stop signal) and waits up to ``timeout`` for the thread; it is safe twice and
    before a start. :attr:`started` is set once the thread runs. :meth:`request_stop` and
    :meth:`join` are its two halves, for stopping several at once and then waiting for them.
    """

    name = "service"
    #: Where a call that fails for want of the database says so (the worker sets it):
    #: in a few lines per outage, not a traceback per failure.
    outage: OutageLog | None = None

    def __init__(self) -> None:
        self.started = threading.Event()  # set once the thread runs
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()  # start and stop from different threads at once

    def start(self) -> None:
        with self._lock:
            if self._thread is not None or self._stop.is_set():
                return
            self._thread = threading.Thread(target=self._main, name=f"shiftwork-{self.name}",
                                            daemon=True)
            self._thread.start()

    def _main(self) -> None:
        self.started.set()
        self.run()

    def run(self) -> None:
        """The thread's body: returns once :attr:`stopping` (or when it has no more to do)."""
        raise NotImplementedError

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def request_stop(self) -> None:
        """Ask the body to end; do not wait for it."""
        with self._lock:
            if self._stop.is_set():
                return
            self._stop.set()
        self.interrupt()

    def interrupt(self) -> None:
        """Wake a body blocked elsewhere than on the stop signal (once, from request_stop)."""

    def join(self, timeout: float) -> None:
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def stop(self, timeout: float = 5.0) -> None:
        self.request_stop()
        self.join(timeout)


#: The share of its interval a tick's wait may be shorter by (jittered()).
JITTER = 0.1


def jittered(interval: float) -> float:
    """``interval`` less up to a tenth, drawn afresh each time. A process's services
    started together on equal or multiple intervals would tick in lockstep, each holding a
    pooled connection at the same moment, so the pool grows past its idle minimum and
    keeps the extra connection; drawn waits drift apart. Never longer: a heartbeat or a
    lease renewal keeps its bound."""
    return interval * (1.0 - JITTER * random.random())


class Service(ThreadService):
    """A thread that calls :meth:`tick` every ``interval`` seconds until stopped."""

    def __init__(self, interval: float) -> None:
        super().__init__()
        self.interval = interval
        #: Set by a tick to wait this long before the next one, once, instead of interval.
        self.next_wait: float | None = None

    def run(self) -> None:
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
            self._stop.wait(jittered(self.interval) if wait is None else max(wait, 0.0))

    def tick(self) -> None:
        raise NotImplementedError
