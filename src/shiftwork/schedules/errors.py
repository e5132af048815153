"""The errors of the stored schedules."""

from __future__ import annotations

from shiftwork.core.errors import ShiftworkError


class NotLeader(ShiftworkError):
    """This scheduler's term is over: the write was not made."""


class UnknownScheduleError(ShiftworkError, LookupError):
    """No schedule with that name."""
