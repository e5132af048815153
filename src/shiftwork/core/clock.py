"""The one injectable clock.

Ownership decisions (leases, run_at, leader terms) are made on the database's
clock: a :class:`SystemClock` passes ``None`` to SQL, which then uses the
database's ``now()``. A :class:`FakeClock` passes its own instant instead, so
tests can move time without sleeping.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    """Where shiftwork reads the time: :class:`SystemClock`, or :class:`FakeClock` in tests."""

    def now(self) -> datetime:
        """The current instant, aware, in UTC."""

    def db_now(self) -> datetime | None:
        """The instant to hand to SQL, or None to let the database use its own clock."""

    def monotonic(self) -> float:
        """Seconds on a monotonic clock, for durations."""


class SystemClock:
    """The real time; SQL uses the database's own ``now()``."""

    def now(self) -> datetime:
        """The current instant, aware, in UTC."""
        return datetime.now(UTC)

    def db_now(self) -> datetime | None:
        """None: SQL uses the database's clock."""
        return None

    def monotonic(self) -> float:
        """Seconds for measuring intervals (:func:`time.monotonic`)."""
        return time.monotonic()


class FakeClock:
    """A clock that only moves when told to. Thread-safe."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2030, 1, 1, tzinfo=UTC)
        self._mono = 0.0
        self._lock = threading.Lock()

    def now(self) -> datetime:
        """The clock's instant (2030-01-01 UTC unless started elsewhere)."""
        with self._lock:
            return self._now

    def db_now(self) -> datetime | None:
        """The same instant: SQL uses it instead of the database's clock."""
        return self.now()

    def monotonic(self) -> float:
        """Seconds moved since the clock was made."""
        with self._lock:
            return self._mono

    def advance(self, seconds: float) -> datetime:
        """Move time forward by ``seconds``; returns the new instant."""
        with self._lock:
            self._now += timedelta(seconds=seconds)
            self._mono += seconds
            return self._now

    def set(self, instant: datetime) -> None:
        """Jump to ``instant`` (an aware datetime)."""
        with self._lock:
            delta = (instant - self._now).total_seconds()
            self._now = instant
            self._mono += max(delta, 0.0)
