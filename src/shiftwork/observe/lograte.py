"""Log a recurring complaint at most once per interval, with a count of the ones held back.

A flood of connections (failed accepts, clients that never finish a request) must not
become a flood of log lines: one line per kind of trouble every ``interval`` seconds,
saying how many more there were, keeps the log readable and its size bounded.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

#: Seconds between two lines about the same kind of trouble.
DEFAULT_INTERVAL = 10.0


class LogLimiter:
    """``log(key, message, *args)``: logged if nothing of ``key`` was in the last
    ``interval`` seconds, else counted and mentioned in the next line of that key."""

    def __init__(self, logger: logging.Logger, interval: float = DEFAULT_INTERVAL,
                 level: int = logging.WARNING,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.logger = logger
        self.interval = interval
        self.level = level
        self.clock = clock
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}
        self._lock = threading.Lock()  # the metrics server logs from its request threads

    def log(self, key: str, message: str, *args: object) -> bool:
        """Log ``message % args`` now, or hold it back; True when it was logged."""
        now = self.clock()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self.interval:
                self._held[key] = self._held.get(key, 0) + 1
                return False
            self._last[key] = now
            held = self._held.pop(key, 0)
        if held:
            message += " (and %d more like it since the last such line)"
            args = (*args, held)
        self.logger.log(self.level, message, *args)
        return True
