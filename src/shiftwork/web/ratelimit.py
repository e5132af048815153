"""Failed login and Bearer attempts, counted per client address.

After ``max_failures`` failures within ``window`` seconds an address gets 429 with a
``Retry-After`` until its oldest counted failure leaves the window. Only attempts at
the token are limited: a browser with a live session is never slowed down.
"""

from __future__ import annotations

import math
import threading
from collections import deque

from ..clock import Clock

DEFAULT_MAX_FAILURES = 10
DEFAULT_WINDOW = 300.0
#: Most addresses tracked; past it the quietest are forgotten (bounded memory).
CAPACITY = 10_000


class FailureLimiter:
    def __init__(self, clock: Clock, max_failures: int = DEFAULT_MAX_FAILURES,
                 window: float = DEFAULT_WINDOW, capacity: int = CAPACITY) -> None:
        self.clock = clock
        self.max_failures = max_failures
        self.window = window
        self.capacity = capacity
        self._failures: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def _recent(self, address: str, now: float) -> deque[float] | None:
        times = self._failures.get(address)
        while times and times[0] <= now - self.window:
            times.popleft()
        if times is not None and not times:
            del self._failures[address]
            return None
        return times

    def retry_after(self, address: str) -> int | None:
        """Whole seconds ``address`` must wait before its next attempt, or None."""
        with self._lock:
            now = self.clock.monotonic()
            times = self._recent(address, now)
            if times is None or len(times) < self.max_failures:
                return None
            return max(1, math.ceil(times[0] + self.window - now))

    def failed(self, address: str) -> None:
        with self._lock:
            now = self.clock.monotonic()
            times = self._recent(address, now)
            if times is None:
                if len(self._failures) >= self.capacity:
                    del self._failures[next(iter(self._failures))]
                times = self._failures[address] = deque(maxlen=self.max_failures)
            times.append(now)

    def succeeded(self, address: str) -> None:
        with self._lock:
            self._failures.pop(address, None)
