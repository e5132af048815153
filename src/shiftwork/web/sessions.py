"""Dashboard sessions held by the server, so that they expire and can be revoked.

A session cookie carries only a random id (signed); the table here says whether the id
is live and when it was issued. Logout removes the id; a session older than
``max_age`` is refused and dropped. The table lives in the dashboard process: a
restart, which is also how a new token takes effect, ends every session, so a
revocation can never be lost across a restart.
"""

from __future__ import annotations

import secrets
import threading

from shiftwork.core.clock import Clock

#: The default session lifetime: a working day.
DEFAULT_SESSION_MAX_AGE = 8 * 3600.0
#: Most sessions kept at once; logging in past it ends the oldest session.
CAPACITY = 10_000


class Sessions:
    def __init__(self, clock: Clock, max_age: float = DEFAULT_SESSION_MAX_AGE,
                 capacity: int = CAPACITY) -> None:
        self.clock = clock
        self.max_age = max_age
        self.capacity = capacity
        self._issued: dict[str, float] = {}  # id -> issue time (monotonic); insertion order
        self._lock = threading.Lock()

    def issue(self) -> str:
        """A new live session id."""
        sid = secrets.token_urlsafe(24)
        with self._lock:
            while len(self._issued) >= self.capacity:
                del self._issued[next(iter(self._issued))]  # the oldest
            self._issued[sid] = self.clock.monotonic()
        return sid

    def is_live(self, sid: str) -> bool:
        """True for an id issued here, not revoked, younger than ``max_age``."""
        with self._lock:
            issued = self._issued.get(sid)
            if issued is None:
                return False
            if self.clock.monotonic() - issued >= self.max_age:
                del self._issued[sid]
                return False
            return True

    def revoke(self, sid: str) -> None:
        with self._lock:
            self._issued.pop(sid, None)

    def __len__(self) -> int:
        return len(self._issued)
