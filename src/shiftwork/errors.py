"""One exception root for everything shiftwork raises on purpose.

Each error says what was wrong and, where it can, what to do about it.
Database errors keep their cause (``raise ... from exc``).
"""

from __future__ import annotations

from typing import Any


class ShiftworkError(Exception):
    """Root of every error shiftwork raises on purpose."""


class ConfigurationError(ShiftworkError):
    """The app, a task or a queue was declared wrongly (bad DSN, bad name, bad option)."""


class UnknownTaskError(ShiftworkError, LookupError):
    """A job names a task that is not registered on this app."""


class PayloadError(ShiftworkError, ValueError):
    """Job arguments that cannot be stored: not JSON, too large, or not matching the signature."""


class JobNotFoundError(ShiftworkError, LookupError):
    """No job with that id."""


class IllegalTransitionError(ShiftworkError):
    """A job state change that the state machine does not allow."""


class StorageError(ShiftworkError):
    """The database could not be reached or refused an operation."""


class JobCancelled(BaseException):
    """Raised inside a task when its job was cancelled.

    A BaseException on purpose: a task's bare ``except Exception`` must not swallow it.
    """


class RetryIn(ShiftworkError):
    """Raise from a task to ask for a retry after a specific delay (seconds)."""

    def __init__(self, seconds: float, reason: str = "") -> None:
        super().__init__(reason or f"retry requested in {seconds}s")
        self.seconds = float(seconds)
        self.reason = reason


class Snooze(ShiftworkError):
    """Raise from a task to run it again later without spending an attempt.

    ``Snooze(seconds)`` or ``Snooze(until=datetime)``. The job waits as ``scheduled``.
    """

    def __init__(self, seconds: float = 0.0, until: Any = None, reason: str = "") -> None:
        super().__init__(reason or (f"snoozed until {until}" if until else f"snoozed {seconds}s"))
        self.seconds = float(seconds)
        self.until = until
        self.reason = reason
