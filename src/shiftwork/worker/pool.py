"""A thread pool that can replace a thread stuck in a timed-out job.

``concurrent.futures.ThreadPoolExecutor`` cannot give up on a thread; this pool
can: :meth:`ThreadPool.replace` adds a thread so the queue keeps its capacity
while the stuck one finishes (its late result is discarded by the executor).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

log = logging.getLogger("shiftwork.worker.pool")

_STOP = object()


class ThreadPool:
    def __init__(self, size: int, name: str) -> None:
        self.name = name
        self._work: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._excess = 0  # threads to retire once their stuck job returns
        self._threads: list[threading.Thread] = []
        for _ in range(size):
            self._spawn()

    def _spawn(self) -> None:
        t = threading.Thread(target=self._loop, name=f"shiftwork-{self.name}-{len(self._threads)}",
                             daemon=True)
        self._threads.append(t)
        t.start()

    def submit(self, fn: Callable[[], None]) -> None:
        self._work.put(fn)

    def replace(self) -> None:
        """Add a thread for one that is stuck; the stuck one retires when it returns."""
        with self._lock:
            self._excess += 1
            self._spawn()

    def _loop(self) -> None:
        while True:
            try:
                item = self._work.get()
                if item is _STOP:
                    return
                item()  # type: ignore[operator]
            except BaseException:  # an exception injected late must not kill the pool
                log.debug("pool %s: exception escaped a job wrapper", self.name, exc_info=True)
            if self._excess:  # read without the lock first: this runs once per job
                with self._lock:
                    if self._excess > 0:
                        self._excess -= 1
                        return

    def shutdown(self) -> None:
        for _ in self._threads:
            self._work.put(_STOP)
