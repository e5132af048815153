"""The one check for numbers that reach the database: durations, counts and instants.

Every number a caller gives that ends in a column (a delay, a ``run_at``, a timeout,
``max_attempts``, a priority, a ``RetryIn`` or ``Snooze`` delay, a rate-limit hold) is
checked here, so that a NaN, an infinity or a huge value is refused with an error naming
the parameter instead of being stored (NaN compares false with everything: a NaN delay
was silently "now") or failing later with a driver or overflow error.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

from shiftwork.core.errors import ConfigurationError

#: The longest duration accepted anywhere (a delay, a timeout, a snooze): 100 years. Far
#: enough for any plan, near enough that ``now + it`` fits every engine's timestamps.
MAX_SECONDS = 100 * 365 * 24 * 3600.0
#: Instants (``run_at``, ``Snooze(until=)``) must fall before this: year 9999 is where
#: Python's datetime ends, and where jobs waiting on dependencies park (job.DEPS_WAIT).
LATEST = datetime(9999, 1, 1, tzinfo=UTC)
#: Most attempts a job may have: ``attempt`` is a 32-bit column on PostgreSQL.
MAX_ATTEMPTS = 1_000_000
#: Most items one run may report (``ctx.processed``) or a schedule or task expect
#: (``expect_items``): a 64-bit column, and exact as a JSON number.
MAX_ITEMS = 10**15
#: The largest job, group or workflow id: ids are PostgreSQL bigints. A larger one in a URL
#: or a filter is refused (or found absent) before it reaches a statement.
MAX_ID = 2**63 - 1
#: Most rows one listing returns (``app.list_jobs``, the command line's ``--limit``).
MAX_LIST = 1_000_000


def seconds(value: Any, what: str, *, allow_zero: bool = True,
            maximum: float = MAX_SECONDS) -> float:
    """``value`` (seconds as an int or float, or a timedelta) as float seconds, finite,
    ``>= 0`` (``> 0`` unless ``allow_zero``) and at most ``maximum``."""
    if isinstance(value, timedelta):
        out = value.total_seconds()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            out = float(value)
        except OverflowError:  # an int too large for a float
            out = math.inf
    else:
        raise ConfigurationError(f"{what} must be seconds (a number or a timedelta), "
                                 f"not {value!r}")
    if not math.isfinite(out):
        raise ConfigurationError(f"{what} must be a finite number of seconds, not {out!r}")
    if out < 0 or (out == 0 and not allow_zero):
        raise ConfigurationError(f"{what} must be {'>= 0' if allow_zero else '> 0'} seconds, "
                                 f"not {out!r}")
    if out > maximum:
        raise ConfigurationError(f"{what} of {out:g} seconds is over the limit of "
                                 f"{maximum:g} seconds")
    return out


def whole(value: Any, what: str, low: int, high: int) -> int:
    """``value`` as an int from ``low`` to ``high`` (a bool or a float is refused)."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigurationError(f"{what} must be a whole number from {low} to {high}, "
                                 f"not {value!r}")
    return value


def instant(value: Any, what: str) -> datetime:
    """``value`` as a timezone-aware datetime before :data:`LATEST`."""
    if not isinstance(value, datetime):
        raise ConfigurationError(f"{what} must be a datetime, not {value!r}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ConfigurationError(f"{what} must be timezone-aware (e.g. datetime.now(UTC))")
    try:
        value.astimezone(UTC)
    except OverflowError:
        raise ConfigurationError(f"{what} {value!r} is out of range") from None
    if value >= LATEST:
        raise ConfigurationError(f"{what} must be before {LATEST.isoformat()}, not "
                                 f"{value.isoformat()}")
    return value


_LAST = LATEST - timedelta(seconds=1)


def later(base: datetime, delay: float) -> datetime:
    """``base + delay`` seconds, for a delay :func:`seconds` accepted (never overflows)."""
    try:
        out = base + timedelta(seconds=delay)
    except OverflowError:
        return _LAST
    return out if out < _LAST else _LAST
