"""What a task raises to steer its own job: retry after a delay, or run again later
without spending an attempt. (Apart from errors.py: these check their numbers with
bounds.py, which raises errors.py's ``ConfigurationError``.)"""

from __future__ import annotations

from typing import Any

from shiftwork.core.bounds import instant
from shiftwork.core.bounds import seconds as check_seconds
from shiftwork.core.errors import ShiftworkError


class RetryIn(ShiftworkError):
    """Raise from a task to ask for a retry after a specific delay (seconds)."""

    def __init__(self, seconds: float, reason: str = "") -> None:

        self.seconds = check_seconds(seconds, "RetryIn: seconds")
        super().__init__(reason or f"retry requested in {seconds}s")
        self.reason = reason


class Snooze(ShiftworkError):
    """Raise from a task to run it again later without spending an attempt.

    ``Snooze(seconds)`` or ``Snooze(until=datetime)``. The job waits as ``scheduled``.
    """

    def __init__(self, seconds: float = 0.0, until: Any = None, reason: str = "") -> None:

        self.seconds = check_seconds(seconds, "Snooze: seconds")
        self.until = None if until is None else instant(until, "Snooze: until")
        super().__init__(reason or (f"snoozed until {until}" if until else f"snoozed {seconds}s"))
        self.reason = reason
