"""Interval schedules (``every 90m``) and excluded dates, beside cron.

A schedule's expression is a cron string or ``every DURATION [from INSTANT]``, either
followed by ``except DATE,DATE,...``. An interval counts elapsed time, not wall time: it
fires at ``anchor + k * period`` for every integer ``k``, so a DST change never moves,
doubles or drops a run, and the same instants come out on every host and after every
deploy (the anchor is part of the expression; without ``from`` it is
2000-01-01T00:00:00Z). Excluded dates are read on the schedule's zone's calendar: a fire
instant whose local date is excluded does not occur (it is not missed, skipped or caught
up; it was never due).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from typing import Protocol
from zoneinfo import ZoneInfo

from shiftwork.schedules.cron import CronError, CronSchedule, _load_zone

#: The phase of an interval declared without ``from``: fixed, so that every host and every
#: deploy computes the same instants.
DEFAULT_ANCHOR = datetime(2000, 1, 1, tzinfo=UTC)
#: Shortest interval: the scheduler's pass runs every 0.25 s, so one second is the floor.
MIN_PERIOD = timedelta(seconds=1)
MAX_EXCLUDED = 1000
#: Consecutive excluded fire instants after which a schedule is refused (it would never run).
_MAX_SKIPPED = 100_000
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_PART = re.compile(r"(\d+)([smhdw])")
_US = 1_000_000


class Timetable(Protocol):
    """What the planner asks of a schedule's expression (cron or interval)."""

    @property
    def tz(self) -> str: ...

    def next_after(self, t: datetime) -> datetime: ...

    def iter_after(self, t: datetime) -> Iterator[datetime]: ...

    def fires_between(self, start: datetime, end: datetime) -> list[datetime]: ...

    def local(self, t: datetime) -> datetime: ...

    def period_hint(self) -> timedelta: ...


def parse_duration(text: str) -> timedelta:
    """``90m``, ``1h30m``, ``36h``, ``2w``: whole units s, m, h, d, w, largest first."""
    compact = text.replace(" ", "")
    parts = _PART.findall(compact)
    if not compact or "".join(n + u for n, u in parts) != compact:
        raise CronError(f"bad interval {text!r}: write it as whole units, e.g. 90m, 1h30m, "
                        "36h, 2d (s, m, h, d, w)")
    units = [u for _, u in parts]
    if len(set(units)) != len(units) or units != sorted(units, key=lambda u: -_UNITS[u]):
        raise CronError(f"bad interval {text!r}: each unit once, largest first (1h30m)")
    return timedelta(seconds=sum(int(n) * _UNITS[u] for n, u in parts))


def format_duration(period: timedelta) -> str:
    """The canonical text of a period (``1h30m``); the inverse of :func:`parse_duration`."""
    left = int(period.total_seconds())
    out = []
    for unit in ("w", "d", "h", "m", "s"):
        n, left = divmod(left, _UNITS[unit])
        if n:
            out.append(f"{n}{unit}")
    return "".join(out) or "0s"


class _Walks:
    """Iteration over fire instants, built on ``next_after``."""

    __slots__ = ()

    def next_after(self, t: datetime) -> datetime:
        raise NotImplementedError

    def iter_after(self, t: datetime) -> Iterator[datetime]:
        cursor = t
        while True:
            cursor = self.next_after(cursor)
            yield cursor

    def fires_between(self, start: datetime, end: datetime) -> list[datetime]:
        """Fire instants in (start, end]."""
        out: list[datetime] = []
        for fire in self.iter_after(start):
            if fire > end:
                break
            out.append(fire)
        return out


class IntervalSchedule(_Walks):
    """Fires at ``anchor + k * period`` for every integer ``k`` (elapsed time)."""

    __slots__ = ("_anchor_us", "_period_us", "_tz", "_zone", "anchor", "period")

    def __init__(self, period: timedelta, anchor: datetime, tz: str) -> None:
        if period < MIN_PERIOD or period.microseconds:
            raise CronError(f"interval {period} must be whole seconds, at least {MIN_PERIOD}")
        if anchor.tzinfo is None:
            raise CronError(f"interval anchor {anchor.isoformat()} must carry a time zone")
        self.period, self.anchor = period, anchor.astimezone(UTC)
        self._period_us = period // timedelta(microseconds=1)
        self._anchor_us = _micros(self.anchor)
        self._zone: ZoneInfo = _load_zone(tz)
        self._tz = tz

    @property
    def tz(self) -> str:
        return self._tz

    def __repr__(self) -> str:
        return f"IntervalSchedule({format_duration(self.period)}, {self.anchor.isoformat()})"

    def next_after(self, t: datetime) -> datetime:
        if t.tzinfo is None:
            raise CronError(f"next_after(t): {t.isoformat()} must be timezone-aware")
        k = (_micros(t) - self._anchor_us) // self._period_us + 1  # floor, then the next
        return _instant(self._anchor_us + k * self._period_us)

    def local(self, t: datetime) -> datetime:
        return t.astimezone(self._zone)

    def period_hint(self) -> timedelta:
        return self.period


class Excluding(_Walks):
    """A timetable without the instants whose local date (in its zone) is excluded."""

    __slots__ = ("base", "dates")

    def __init__(self, base: Timetable, dates: frozenset[date]) -> None:
        self.base, self.dates = base, dates

    @property
    def tz(self) -> str:
        return self.base.tz

    def __repr__(self) -> str:
        return f"Excluding({self.base!r}, {sorted(d.isoformat() for d in self.dates)})"

    def next_after(self, t: datetime) -> datetime:
        cursor = t
        for _ in range(_MAX_SKIPPED):
            cursor = self.base.next_after(cursor)
            if self.base.local(cursor).date() not in self.dates:
                return cursor
        raise CronError(f"{self!r}: {_MAX_SKIPPED} fire times in a row after "
                        f"{t.isoformat()} fall on excluded dates")

    def local(self, t: datetime) -> datetime:
        return self.base.local(t)

    def period_hint(self) -> timedelta:
        return self.base.period_hint()


def timetable(expression: str, tz: str) -> Timetable:
    """The timetable a schedule's expression describes (see the module's docstring)."""
    text, _, excluded = expression.partition(" except ")
    text = text.strip()
    base: Timetable
    if text.startswith("every "):
        period, anchor = parse_every(text)
        base = IntervalSchedule(period, anchor, tz)
    else:
        base = CronSchedule(text, tz)
    return Excluding(base, parse_dates(excluded)) if excluded.strip() else base


def parse_every(text: str) -> tuple[timedelta, datetime]:
    """``every 90m`` or ``every 90m from 2026-01-01T06:00:00Z``."""
    body = text.removeprefix("every ").strip()
    spec, _, start = body.partition(" from ")
    period = parse_duration(spec)
    if not start.strip():
        return period, DEFAULT_ANCHOR
    try:
        anchor = datetime.fromisoformat(start.strip())
    except ValueError:
        raise CronError(f"bad interval anchor {start.strip()!r}: an ISO 8601 instant with its "
                        "offset, e.g. 2026-01-01T06:00:00Z") from None
    if anchor.tzinfo is None:
        raise CronError(f"interval anchor {start.strip()!r} must carry an offset (Z, +02:00)")
    return period, anchor


def parse_dates(text: str) -> frozenset[date]:
    """``2026-12-25,2027-01-01`` (ISO dates, commas)."""
    out = set()
    for item in (x.strip() for x in text.split(",")):
        out.add(_date(item))
    if len(out) > MAX_EXCLUDED:
        raise CronError(f"at most {MAX_EXCLUDED} excluded dates, not {len(out)}")
    return frozenset(out)


def expression(cron: str | None = None, *, every: str | timedelta | None = None,
               anchor: datetime | None = None, exclude: object = None) -> str:
    """The canonical expression of a declaration: ``cron`` or ``every`` (with ``anchor``),
    and the excluded dates; each part checked."""
    if (cron is None) == (every is None):
        raise CronError("give a schedule either a cron string or every= (an interval), "
                        "not both and not neither")
    if every is not None:
        period = every if isinstance(every, timedelta) else parse_duration(str(every))
        if period < MIN_PERIOD or period.microseconds:
            raise CronError(f"every={every!r}: whole seconds, at least {MIN_PERIOD}")
        start = anchor or DEFAULT_ANCHOR
        if start.tzinfo is None:
            raise CronError(f"anchor={start.isoformat()} must carry a time zone")
        text = f"every {format_duration(period)}"
        if start != DEFAULT_ANCHOR:
            text += f" from {_iso_z(start)}"
    else:
        if anchor is not None:
            raise CronError("anchor= is for every= (an interval), not for a cron string")
        text = str(cron)
    if exclude:
        items = [exclude] if isinstance(exclude, (str, date)) or not hasattr(
            exclude, "__iter__") else list(exclude)
        dates = sorted({_date(d) for d in items})
        if len(dates) > MAX_EXCLUDED:
            raise CronError(f"at most {MAX_EXCLUDED} excluded dates, not {len(dates)}")
        text += " except " + ",".join(d.isoformat() for d in dates)
    return text


def _date(value: object) -> date:
    if isinstance(value, datetime):  # a datetime is a date too: say which was meant
        raise CronError(f"exclude= takes dates (the schedule's zone's calendar days), not "
                        f"the instant {value.isoformat()}")
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value))
    except ValueError:
        raise CronError(f"bad excluded date {value!r}: an ISO date, e.g. 2026-12-25") from None


def _iso_z(t: datetime) -> str:
    u = t.astimezone(UTC)
    return u.strftime("%Y-%m-%dT%H:%M:%S") + (f".{u.microsecond:06d}" if u.microsecond
                                               else "") + "Z"


def _micros(t: datetime) -> int:
    delta = t.astimezone(UTC) - DEFAULT_ANCHOR
    return delta // timedelta(microseconds=1)


def _instant(micros: int) -> datetime:
    return DEFAULT_ANCHOR + timedelta(microseconds=micros)
