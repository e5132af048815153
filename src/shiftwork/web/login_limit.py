"""Failed login and Bearer attempts, counted per key (a client address, a proxy's
address, a browser that logged in before).

After ``max_failures`` failures within ``window`` seconds a key gets 429 with a
``Retry-After`` until its oldest counted failure leaves the window. An attempt names
every key it counts under and is refused when any of them is over (the dashboard names
the client address and, behind a proxy, the proxy's own address: rotating
``X-Forwarded-For`` does not make a fresh client). A shared key (``shared(...)``: a
proxy's address, all its clients' failures together) has ``SHARED_FACTOR`` times the
budget. Only attempts at the token are limited: a browser with a live session is never
slowed down.
"""

from __future__ import annotations

import math
import threading
from collections import deque

from shiftwork.core.clock import Clock

DEFAULT_MAX_FAILURES = 10
DEFAULT_WINDOW = 300.0
#: Most keys tracked; past it the quietest are forgotten (bounded memory).
CAPACITY = 10_000
#: A shared key's budget, in multiples of one client's.
SHARED_FACTOR = 10
_SHARED = "shared:"


def shared(key: str) -> str:
    """``key`` as a shared key (the failures of many clients together)."""
    return _SHARED + key


class FailureLimiter:
    def __init__(self, clock: Clock, max_failures: int = DEFAULT_MAX_FAILURES,
                 window: float = DEFAULT_WINDOW, capacity: int = CAPACITY) -> None:
        self.clock = clock
        self.max_failures = max_failures
        self.window = window
        self.capacity = capacity
        self._failures: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def _budget(self, key: str) -> int:
        return self.max_failures * (SHARED_FACTOR if key.startswith(_SHARED) else 1)

    def _recent(self, key: str, now: float) -> deque[float] | None:
        times = self._failures.get(key)
        while times and times[0] <= now - self.window:
            times.popleft()
        if times is not None and not times:
            del self._failures[key]
            return None
        return times

    def retry_after(self, *keys: str) -> int | None:
        """Whole seconds to wait before the next attempt counted under ``keys``, or None."""
        with self._lock:
            now = self.clock.monotonic()
            waits = []
            for key in keys:
                times = self._recent(key, now)
                if times is not None and len(times) >= self._budget(key):
                    waits.append(max(1, math.ceil(times[0] + self.window - now)))
            return max(waits) if waits else None

    def failed(self, *keys: str) -> None:
        with self._lock:
            now = self.clock.monotonic()
            for key in keys:
                times = self._recent(key, now)
                if times is None:
                    if len(self._failures) >= self.capacity:
                        del self._failures[next(iter(self._failures))]
                    times = self._failures[key] = deque(maxlen=self._budget(key))
                times.append(now)

    def succeeded(self, key: str) -> None:
        with self._lock:
            self._failures.pop(key, None)
