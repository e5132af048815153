"""Cron expressions and their fire instants in an IANA time zone (policy ``shiftwork-dst-v1``).

This module is pure: nothing here reads the clock or touches storage. Every function takes
the instant it reasons about as an argument.

Syntax
------
* 5 fields ``minute hour day-of-month month day-of-week``, or 6 fields with **seconds
  first** (``second minute hour day-of-month month day-of-week``).
* ``*``, ``?`` (day fields only), lists, ranges ``a-b``, steps ``*/n``, ``a-b/n`` and ``a/n``;
  names ``JAN``..``DEC`` and ``SUN``..``SAT`` in any case; day-of-week ``0`` and ``7`` are
  both Sunday.
* Macros ``@yearly`` ``@annually`` ``@monthly`` ``@weekly`` ``@daily`` ``@midnight``
  ``@hourly``.
* Extensions: ``L`` in day-of-month (last day of the month), ``nL`` in day-of-week (last
  weekday ``n`` of the month), ``n#k`` in day-of-week (``k``-th weekday ``n``, k in 1..5).
* Day-of-month and day-of-week combine with AND when either field's text starts with
  ``*`` or ``?``, and with OR otherwise (classic cron).

Time zones and DST
------------------
The expression is matched against the zone's local wall clock. Two classes:

* **frequency** schedules (the hour set is all 24 hours) fire at every real instant
  whose local reading matches: readings skipped by a gap never fire, readings repeated
  by a fall-back fire twice;
* **fixed-time** schedules (everything else) fire once per intended wall-clock
  occurrence: a repeated reading fires at its first instant, a reading inside a gap is
  read with the offset in force before the gap (Python's ``fold=0``), and several
  intended readings that land on one instant fire once.

How the search works
--------------------
A zone's UTC offset is piecewise constant in real time. Within one piece (a *segment*)
local wall time and real time move together, so the next matching wall reading gives
the next fire directly. The search walks the segments from the instant asked about and,
inside each, jumps from matching date to matching date (months that cannot match are
skipped whole) and then to the first matching time of day. It never steps minute by
minute. Offset changes are located by sampling each month every few hours and bisecting
to the second; the result is cached per zone and month, and only looked up near
candidate fires. Away from offset changes a short fast path gives the same answer.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from shiftwork.core.errors import ShiftworkError

__all__ = ["MACROS", "CronError", "CronExpression", "CronSchedule"]


class CronError(ShiftworkError, ValueError):
    """A cron expression or a schedule's time zone is invalid, or a schedule cannot fire.

    The message names the expression, the field and the offending value.
    """


MACROS: dict[str, str] = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

_MONTH_NAMES = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_DOW_NAMES = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")

_ONE_SECOND = timedelta(seconds=1)
_ONE_DAY = timedelta(days=1)

# Offset changes are found by sampling every _SAMPLE_STEP and bisecting. This is exact as
# long as no zone changes its offset twice within one step; in tzdata 2025b the closest
# pair of offset changes in any zone is about 95 hours apart.
_SAMPLE_STEP = timedelta(hours=6)

# The search never goes beyond these years (datetime itself stops at 9999).
_MIN_YEAR = 2
_MAX_YEAR = 9997
_LAST_DATE = date(_MAX_YEAR, 12, 31)

# Zone names that tzdata still ships but that are abbreviations, not places. They are
# ambiguous for people ("EST" in Australia?) and are rejected.
_ABBREVIATION_ZONES = frozenset({"EST", "MST", "HST", "CET", "EET", "MET", "WET"})
# Names that exist on some hosts but do not name one zone everywhere.
_HOST_DEPENDENT_ZONES = frozenset({"localtime", "posixrules"})


# --------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _FieldSpec:
    name: str
    lo: int
    hi: int
    names: tuple[str, ...] = ()  # names[i] has value i + name_base
    name_base: int = 0
    star_hi: int | None = None  # upper bound used by "*" and "a/n" (day-of-week: 6)


_SECOND = _FieldSpec("second", 0, 59)
_MINUTE = _FieldSpec("minute", 0, 59)
_HOUR = _FieldSpec("hour", 0, 23)
_DOM = _FieldSpec("day-of-month", 1, 31)
_MONTH = _FieldSpec("month", 1, 12, _MONTH_NAMES, 1)
_DOW = _FieldSpec("day-of-week", 0, 7, _DOW_NAMES, 0, star_hi=6)

_NUMBER = re.compile(r"[0-9]+")
_WORD = re.compile(r"[A-Za-z]+")
_DAY_EXTENSION = re.compile(r"[0-9A-Za-z]*[LlWw]|[0-9A-Za-z]+#[0-9]+")


class _FieldParser:
    """Parses one field of one expression; raises CronError naming both."""

    def __init__(self, text: str, spec: _FieldSpec, raw: str) -> None:
        self.text = text
        self.spec = spec
        self.raw = raw

    def fail(self, detail: str) -> CronError:
        return CronError(f'cron "{self.text}": {self.spec.name} field: {detail}')

    def value(self, token: str) -> int:
        spec = self.spec
        if _NUMBER.fullmatch(token):
            number = int(token)
        elif spec.names and _WORD.fullmatch(token):
            upper = token.upper()
            if upper not in spec.names:
                raise self.fail(
                    f'"{token}" is not a {spec.name} name; use {spec.names[0]}..{spec.names[-1]}'
                    f" or {spec.lo}-{spec.hi}"
                )
            number = spec.names.index(upper) + spec.name_base
        elif token == "":
            raise self.fail(f'missing value in "{self.raw}"')
        elif spec not in (_DOM, _DOW) and _DAY_EXTENSION.fullmatch(token):
            raise self.fail(f'"{token}": L, W and # are only allowed in the day fields')
        else:
            kind = f"number or {spec.name} name" if spec.names else "number"
            raise self.fail(f'"{token}" is not a {kind}')
        if not spec.lo <= number <= spec.hi:
            raise self.fail(f"{number} is out of range {spec.lo}-{spec.hi}")
        return number

    def step(self, token: str) -> int:
        if not _NUMBER.fullmatch(token):
            raise self.fail(f'step "{token}" is not a number')
        n = int(token)
        span = (self.spec.star_hi or self.spec.hi) - self.spec.lo + 1
        if not 1 <= n <= span:
            raise self.fail(f"step {n} is out of range 1-{span}")
        return n

    def item(self, item: str) -> set[int]:
        spec = self.spec
        star_hi = spec.star_hi if spec.star_hi is not None else spec.hi
        base, slash, step_text = item.partition("/")
        step = self.step(step_text) if slash else 1
        if base in ("*", "?"):
            if base == "?" and spec not in (_DOM, _DOW):
                raise self.fail('"?" is only allowed in the day-of-month and day-of-week fields')
            start, end = spec.lo, star_hi
        elif "-" in base:
            first, _, last = base.partition("-")
            start = self.value(first)
            end = self.value(last)
            if spec is _DOW and end == 0 and start > 0 and _WORD.fullmatch(last):
                end = 7  # "MON-SUN": a named Sunday ending a range is day 7
            if start > end:
                raise self.fail(
                    f'range "{base}" runs backwards ({start} > {end}); wrap-around ranges'
                    " are not allowed, split it into two parts of a list"
                )
        else:
            start = self.value(base)
            end = star_hi if slash else start
            if slash and start > end:
                raise self.fail(f'"{item}" starts after the end of the range {spec.lo}-{end}')
        return set(range(start, end + 1, step))


def _month_length(year: int, month: int) -> int:
    if month == 2:
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return 29 if leap else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _cron_weekday(d: date) -> int:
    """0 = Sunday .. 6 = Saturday."""
    return (d.weekday() + 1) % 7


_POSSIBLE_LENGTHS = {m: ((28, 29) if m == 2 else (_month_length(2001, m),)) for m in range(1, 13)}


@dataclass(frozen=True)
class CronExpression:
    """A parsed cron expression: the expanded field sets plus the day extensions.

    Build it with :meth:`parse`. Day-of-week values are 0 (Sunday) .. 6 (Saturday);
    ``7`` in the text is stored as ``0``.
    """

    text: str = field(compare=False)
    seconds: frozenset[int]
    minutes: frozenset[int]
    hours: frozenset[int]
    days_of_month: frozenset[int]
    months: frozenset[int]
    days_of_week: frozenset[int]
    last_day_of_month: bool = False
    """``L`` in day-of-month."""
    last_weekdays: frozenset[int] = frozenset()
    """``nL`` in day-of-week: weekday n (0 = Sunday) on its last occurrence in the month."""
    nth_weekdays: frozenset[tuple[int, int]] = frozenset()
    """``n#k`` in day-of-week, stored as (weekday, k)."""
    dom_wildcard: bool = True
    """The day-of-month text starts with ``*`` or ``?``."""
    dow_wildcard: bool = True
    """The day-of-week text starts with ``*`` or ``?``."""
    has_seconds: bool = False
    """The expression had 6 fields (seconds first)."""

    _hours: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _minutes: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _seconds: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _day_table: dict[tuple[int, int], tuple[int, ...]] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        for name, values, lo, hi in (
            ("second", self.seconds, 0, 59),
            ("minute", self.minutes, 0, 59),
            ("hour", self.hours, 0, 23),
            ("day-of-month", self.days_of_month, 1, 31),
            ("month", self.months, 1, 12),
            ("day-of-week", self.days_of_week, 0, 6),
        ):
            bad = sorted(v for v in values if not lo <= v <= hi)
            if bad:
                raise CronError(f'cron "{self.text}": {name} field: {bad[0]} is out of range')
        for name, values in (
            ("second", self.seconds),
            ("minute", self.minutes),
            ("hour", self.hours),
            ("month", self.months),
        ):
            if not values:
                raise CronError(f'cron "{self.text}": {name} field: no values')
        object.__setattr__(self, "_hours", tuple(sorted(self.hours)))
        object.__setattr__(self, "_minutes", tuple(sorted(self.minutes)))
        object.__setattr__(self, "_seconds", tuple(sorted(self.seconds)))
        # Which days of a month match depends only on its length and the weekday of its
        # first day, so 4 x 7 tuples describe every month there is.
        table = {
            (length, first): tuple(
                day for day in range(1, length + 1) if self._day_matches(day, first, length)
            )
            for length in (28, 29, 30, 31)
            for first in range(7)
        }
        object.__setattr__(self, "_day_table", table)
        # Every (month, length, first weekday) combination occurs in the Gregorian
        # calendar, so if none of them has a matching day the expression never fires.
        if not any(
            table[length, first]
            for month in self.months
            for length in _POSSIBLE_LENGTHS[month]
            for first in range(7)
        ):
            months = ",".join(_MONTH_NAMES[m - 1] for m in sorted(self.months))
            raise CronError(
                f'cron "{self.text}": never fires: no date in month(s) {months} satisfies'
                " the day-of-month and day-of-week fields"
            )

    # -- parsing -----------------------------------------------------------------------

    @classmethod
    def parse(cls, text: str) -> CronExpression:
        """Parse a 5- or 6-field expression (seconds first) or a macro.

        Raises CronError naming the field and value at fault, or saying that the
        expression never fires (e.g. ``0 0 30 2 *``).
        """
        if not isinstance(text, str):
            raise CronError(f"cron expression must be a string, not {type(text).__name__}")
        if cls is CronExpression:
            return _parse_cached(text)
        return cls._parse(text)

    @classmethod
    def _parse(cls, text: str) -> CronExpression:
        stripped = text.strip()
        if not stripped:
            raise CronError(
                f'cron "{stripped}": empty expression; expected 5 fields'
                " (minute hour day-of-month month day-of-week) or 6 with seconds first"
            )
        body = stripped
        if stripped.startswith("@"):
            word = stripped.split()[0].lower()
            if word == "@reboot":
                raise CronError(
                    f'cron "{stripped}": @reboot is not supported: schedules fire at wall-clock'
                    " times, not when a process starts"
                )
            if word == "@every":
                raise CronError(
                    f'cron "{stripped}": @every is not supported: use a step such as'
                    ' "*/5 * * * *" (every 5 minutes)'
                )
            if word not in MACROS:
                raise CronError(
                    f'cron "{stripped}": unknown macro "{stripped.split()[0]}"; known macros are '
                    + " ".join(MACROS)
                )
            if len(stripped.split()) != 1:
                raise CronError(f'cron "{stripped}": a macro stands alone; remove the extra fields')
            body = MACROS[word]
        parts = body.split()
        if len(parts) not in (5, 6):
            extra = ""
            if len(parts) == 7:
                extra = " (7-field forms with a year field are not supported)"
            raise CronError(
                f'cron "{stripped}": expected 5 fields (minute hour day-of-month month'
                f" day-of-week) or 6 with seconds first, got {len(parts)}{extra}"
            )
        has_seconds = len(parts) == 6
        if not has_seconds:
            parts = ["0", *parts]
        sec_t, min_t, hour_t, dom_t, mon_t, dow_t = parts
        seconds = _FieldParser(stripped, _SECOND, sec_t)
        minutes = _FieldParser(stripped, _MINUTE, min_t)
        hours = _FieldParser(stripped, _HOUR, hour_t)
        months = _FieldParser(stripped, _MONTH, mon_t)
        dom_values, last_dom = cls._parse_dom(_FieldParser(stripped, _DOM, dom_t))
        dow_values, last_wd, nth_wd = cls._parse_dow(_FieldParser(stripped, _DOW, dow_t))
        return cls(
            text=stripped,
            seconds=frozenset(cls._parse_plain(seconds)),
            minutes=frozenset(cls._parse_plain(minutes)),
            hours=frozenset(cls._parse_plain(hours)),
            days_of_month=frozenset(dom_values),
            months=frozenset(cls._parse_plain(months)),
            days_of_week=frozenset(dow_values),
            last_day_of_month=last_dom,
            last_weekdays=frozenset(last_wd),
            nth_weekdays=frozenset(nth_wd),
            dom_wildcard=dom_t.startswith(("*", "?")),
            dow_wildcard=dow_t.startswith(("*", "?")),
            has_seconds=has_seconds,
        )

    @staticmethod
    def _items(parser: _FieldParser) -> list[str]:
        items = parser.raw.split(",")
        if any(item == "" for item in items):
            raise parser.fail(f'empty item in list "{parser.raw}"')
        if "?" in parser.raw and parser.raw != "?":
            raise parser.fail(f'"?" must stand alone, got "{parser.raw}"')
        return items

    @classmethod
    def _parse_plain(cls, parser: _FieldParser) -> set[int]:
        values: set[int] = set()
        for item in cls._items(parser):
            values |= parser.item(item)
        return values

    @classmethod
    def _parse_dom(cls, parser: _FieldParser) -> tuple[set[int], bool]:
        values: set[int] = set()
        last = False
        for item in cls._items(parser):
            upper = item.upper()
            if upper == "L":
                last = True
            elif "W" in upper or "L" in upper or "#" in upper:
                raise parser.fail(
                    f'"{item}" is not supported; the only day-of-month extension is L'
                    " (last day of the month)"
                )
            else:
                values |= parser.item(item)
        return values, last

    @classmethod
    def _parse_dow(cls, parser: _FieldParser) -> tuple[set[int], set[int], set[tuple[int, int]]]:
        values: set[int] = set()
        last: set[int] = set()
        nth: set[tuple[int, int]] = set()
        for item in cls._items(parser):
            upper = item.upper()
            if "#" in upper:
                day_text, _, k_text = upper.partition("#")
                day = parser.value(day_text) % 7
                if not _NUMBER.fullmatch(k_text) or not 1 <= int(k_text) <= 5:
                    raise parser.fail(f'"{item}": the k in n#k must be 1-5')
                nth.add((day, int(k_text)))
            elif upper.endswith("L"):
                day_text = upper[:-1]
                if not day_text:
                    raise parser.fail(
                        f'"{item}": L in day-of-week needs a weekday before it, e.g. 5L'
                        " (last Friday)"
                    )
                if "/" in day_text or "-" in day_text:
                    raise parser.fail(f'"{item}": nL takes a single weekday')
                last.add(parser.value(day_text) % 7)
            else:
                values |= {v % 7 for v in parser.item(item)}
        return values, last, nth

    # -- matching ----------------------------------------------------------------------

    def _day_matches(self, day: int, first_weekday: int, length: int) -> bool:
        weekday = (first_weekday + day - 1) % 7
        dom = day in self.days_of_month or (self.last_day_of_month and day == length)
        dow = (
            weekday in self.days_of_week
            or (weekday in self.last_weekdays and day > length - 7)
            or (weekday, (day - 1) // 7 + 1) in self.nth_weekdays
        )
        if self.dom_wildcard or self.dow_wildcard:
            return dom and dow
        return dom or dow

    @property
    def is_frequency(self) -> bool:
        """True when the hour set is all 24 hours: the schedule follows real elapsed time."""
        return len(self.hours) == 24

    def matches(self, wall: datetime) -> bool:
        """Whether a local wall-clock reading (naive or aware, read as is) matches."""
        if not (
            wall.month in self.months
            and wall.hour in self.hours
            and wall.minute in self.minutes
            and wall.second in self.seconds
            and wall.microsecond == 0
        ):
            return False
        return wall.day in self._days_in(wall.year, wall.month)

    def _days_in(self, year: int, month: int) -> tuple[int, ...]:
        if month not in self.months:
            return ()
        first = _cron_weekday(date(year, month, 1))
        return self._day_table[_month_length(year, month), first]

    def _first_date(self, start: date, last: date) -> date | None:
        """The first matching date in [start, last]."""
        year, month, day = start.year, start.month, start.day
        while (year, month) <= (last.year, last.month):
            days = self._days_in(year, month)
            i = bisect.bisect_left(days, day)
            if i < len(days):
                found = date(year, month, days[i])
                return found if found <= last else None
            day = 1
            month += 1
            if month > 12:
                month = 1
                year += 1
        return None

    def _first_time(self, hour: int, minute: int, second: int) -> time | None:
        """The first matching time of day at or after hour:minute:second."""
        hours, minutes, seconds = self._hours, self._minutes, self._seconds
        i = bisect.bisect_left(hours, hour)
        if i == len(hours):
            return None
        if hours[i] == hour:
            j = bisect.bisect_left(minutes, minute)
            if j < len(minutes) and minutes[j] == minute:
                k = bisect.bisect_left(seconds, second)
                if k < len(seconds):
                    return time(hour, minute, seconds[k])
                j += 1
            if j < len(minutes):
                return time(hour, minutes[j], seconds[0])
            i += 1
            if i == len(hours):
                return None
        return time(hours[i], minutes[0], seconds[0])

    def _first_wall(self, lo: datetime, hi: datetime) -> datetime | None:
        """The first matching naive wall reading W with lo <= W < hi (lo may have microseconds)."""
        if lo.microsecond:
            lo = lo.replace(microsecond=0) + _ONE_SECOND
        if lo >= hi:
            return None
        day = lo.date()
        if day.day in self._days_in(day.year, day.month):
            tod = self._first_time(lo.hour, lo.minute, lo.second)
            if tod is not None:
                found = datetime.combine(day, tod)
                return found if found < hi else None
        if day >= hi.date():
            return None
        next_day = self._first_date(day + _ONE_DAY, hi.date())
        if next_day is None:
            return None
        found = datetime.combine(next_day, time(self._hours[0], self._minutes[0], self._seconds[0]))
        return found if found < hi else None

    def nominal_period(self) -> timedelta:
        """Smallest gap between consecutive fires on a plain wall clock (no zone, no DST).

        Measured over the first 32 fires after 2000-01-01 00:00 (a leap year starting on
        a Saturday).
        """
        return _nominal_period(self)

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"CronExpression.parse({self.text!r})"


@functools.lru_cache(maxsize=1024)
def _parse_cached(text: str) -> CronExpression:
    return CronExpression._parse(text)


@functools.lru_cache(maxsize=1024)
def _nominal_period(expr: CronExpression) -> timedelta:
    fires: list[datetime] = []
    cursor = datetime(2000, 1, 1)
    end = datetime(2800, 1, 1)
    while len(fires) < 32:
        found = expr._first_wall(cursor, end)
        if found is None:
            break
        fires.append(found)
        cursor = found + _ONE_SECOND
    gaps = [b - a for a, b in itertools.pairwise(fires)]
    return min(gaps) if gaps else timedelta(days=366)


# --------------------------------------------------------------------------------------
# Zones
# --------------------------------------------------------------------------------------


@functools.cache
def _zone_names() -> frozenset[str]:
    return frozenset(available_timezones())


@functools.cache
def _zone_names_folded() -> dict[str, str]:
    return {name.casefold(): name for name in _zone_names()}


def _load_zone(tz: str) -> ZoneInfo:
    if not isinstance(tz, str):
        raise CronError(f"time zone must be an IANA zone name string, not {type(tz).__name__}")
    if tz in _ABBREVIATION_ZONES:
        raise CronError(
            f'time zone "{tz}": abbreviations are not accepted; use an IANA zone name'
            ' that names a place, such as "America/New_York" or "Europe/Berlin"'
        )
    if tz in _HOST_DEPENDENT_ZONES:
        raise CronError(
            f'time zone "{tz}": this name depends on the host; use an IANA zone name such'
            ' as "Europe/London"'
        )
    if tz not in _zone_names():
        hint = ""
        folded = _zone_names_folded().get(tz.casefold())
        if folded is not None and folded not in _ABBREVIATION_ZONES:
            hint = f'; did you mean "{folded}"?'
        elif re.fullmatch(r"(UTC|GMT)[+-]\d{1,2}", tz):
            sign = "-" if tz[3] == "+" else "+"
            hint = f'; for a fixed offset use "Etc/GMT{sign}{int(tz[4:])}" (POSIX sign, inverted)'
        else:
            hint = ' such as "America/New_York" or "UTC"'
        shown = f'"{tz}"' if tz else '"" (empty)'
        raise CronError(f"time zone {shown} is not an IANA zone name in tzdata{hint}")
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError) as exc:  # pragma: no cover - listed but unreadable
        raise CronError(f'time zone "{tz}" could not be loaded: {exc}') from exc


def _offset_at(zone: ZoneInfo, instant: datetime) -> timedelta:
    """UTC offset in force at a naive-UTC instant."""
    offset = zone.fromutc(instant.replace(tzinfo=zone)).utcoffset()
    assert offset is not None
    return offset


@functools.lru_cache(maxsize=16384)
def _month_changes(
    zone: ZoneInfo, year: int, month: int
) -> tuple[tuple[datetime, timedelta, timedelta], ...]:
    """Offset changes (instant, offset before, offset after) in one calendar month (UTC).

    Instants are naive UTC and lie in (first of the month, first of the next month].
    """
    changes: list[tuple[datetime, timedelta, timedelta]] = []
    start = datetime(year, month, 1)
    end = datetime(year + month // 12, month % 12 + 1, 1)
    prev_at, prev_off = start, _offset_at(zone, start)
    while prev_at < end:
        at = min(prev_at + _SAMPLE_STEP, end)
        off = _offset_at(zone, at)
        if off != prev_off:
            lo, hi = prev_at, at  # offset(lo) == prev_off != offset(hi); changes are whole seconds
            while hi - lo > _ONE_SECOND:
                mid = (lo + (hi - lo) // 2).replace(microsecond=0)
                if _offset_at(zone, mid) == prev_off:
                    lo = mid
                else:
                    hi = mid
            changes.append((hi, prev_off, off))
        prev_at, prev_off = at, off
    return tuple(changes)


def _first_change(
    zone: ZoneInfo, after: datetime, until: datetime
) -> tuple[datetime, timedelta, timedelta] | None:
    """The first offset change at an instant in (after, until], naive UTC."""
    # A change at exactly 00:00 on the 1st is listed under the month before.
    year, month = (after.year, after.month - 1) if after.month > 1 else (after.year - 1, 12)
    while (year, month) <= (until.year, until.month):
        for change in _month_changes(zone, year, month):
            if change[0] > until:
                return None
            if change[0] > after:
                return change
        year, month = (year, month + 1) if month < 12 else (year + 1, 1)
    return None


def _check_aware(t: datetime, what: str) -> datetime:
    if not isinstance(t, datetime):
        raise CronError(f"{what} must be a datetime, not {type(t).__name__}")
    if t.tzinfo is None or t.utcoffset() is None:
        raise CronError(f"{what} must be timezone-aware, got naive {t.isoformat()}")
    utc = t.astimezone(UTC).replace(tzinfo=None)
    if not _MIN_YEAR <= utc.year <= _MAX_YEAR:
        raise CronError(
            f"{what} {t.isoformat()} is outside the supported years {_MIN_YEAR}-{_MAX_YEAR}"
        )
    return utc


# --------------------------------------------------------------------------------------
# Schedules
# --------------------------------------------------------------------------------------


class CronSchedule:
    """A cron expression read on the wall clock of one IANA time zone.

    ``next_after(t)`` is the smallest fire instant strictly after ``t`` (policy
    ``shiftwork-dst-v1``); all returned instants are aware UTC datetimes.
    """

    __slots__ = ("_expr", "_recent", "_tz", "_zone")

    def __init__(self, expr: str | CronExpression, tz: str) -> None:
        self._expr = expr if isinstance(expr, CronExpression) else CronExpression.parse(expr)
        self._zone = _load_zone(tz)
        self._tz = tz
        self._recent: dict[datetime, datetime] = {}  # next_after's last answers

    @property
    def expression(self) -> CronExpression:
        return self._expr

    @property
    def tz(self) -> str:
        """The IANA zone name."""
        return self._tz

    @property
    def zone(self) -> ZoneInfo:
        return self._zone

    @property
    def is_frequency(self) -> bool:
        return self._expr.is_frequency

    def __repr__(self) -> str:
        return f"CronSchedule({self._expr.text!r}, {self._tz!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CronSchedule):
            return NotImplemented
        return (self._expr, self._tz) == (other._expr, other._tz)

    def __hash__(self) -> int:
        return hash((self._expr, self._tz))

    # -- the search --------------------------------------------------------------------

    def next_after(self, t: datetime) -> datetime:
        """The smallest fire instant strictly after ``t`` (aware), as an aware UTC datetime."""
        # Schedules sharing an expression come due together (a report per customer at the
        # top of the hour): one pass asks the same question thousands of times. Kept for
        # UTC instants only (the scheduler's cursors): no fold to tell apart.
        found = self._recent.get(t) if t.tzinfo is UTC else None
        if found is None:
            found = self._next_after_utc(_check_aware(t, "next_after(t)")).replace(tzinfo=UTC)
            if t.tzinfo is UTC:
                if len(self._recent) >= 64:
                    self._recent.clear()
                self._recent[t] = found
        return found

    def _next_after_utc(self, t: datetime) -> datetime:
        # Fast path: the next matching reading within two days, when the offset has not
        # changed from two days before t up to that candidate. Then no gap, overlap or
        # repeated reading can put another fire before it (the full search below would
        # find the same instant).
        zone = self._zone
        offset = _offset_at(zone, t)
        local = t + offset
        wall = self._expr._first_wall(_after(local, local), local + 2 * _ONE_DAY)
        if wall is not None:
            candidate = wall - offset
            if _first_change(zone, t - 2 * _ONE_DAY, candidate) is None:
                return candidate
        return self._search(t)

    def _search(self, t: datetime) -> datetime:
        expr, zone = self._expr, self._zone
        fixed = not expr.is_frequency
        # Start two days back: a reading can resolve up to a day later than it reads (a
        # gap's shift), and a reading can repeat up to a day later (a fall-back).
        seg_start = t - 2 * _ONE_DAY
        offset = prev_offset = _offset_at(zone, seg_start)
        best: datetime | None = None
        while True:
            if seg_start.year > _MAX_YEAR:
                raise CronError(
                    f'cron "{expr.text}" in {self._tz}: no fire time after {t.isoformat()}Z'
                    f" before the year {_MAX_YEAR + 1}"
                )
            # Skip spans without a matching date (sparse crons such as Feb 29) without
            # looking up offset changes there. Every later fire reads on or after the
            # first matching date D, so it is later than D 00:00 - 1 day; any offset
            # change more than a day before that cannot affect it.
            first_day = expr._first_date((seg_start - _ONE_DAY).date(), _LAST_DATE)
            if first_day is None:
                raise CronError(
                    f'cron "{expr.text}" in {self._tz}: no fire time after {t.isoformat()}Z'
                    f" before the year {_MAX_YEAR + 1}"
                )
            resume = datetime.combine(first_day, time()) - 2 * _ONE_DAY
            if resume > seg_start:
                seg_start = resume
                offset = prev_offset = _offset_at(zone, seg_start)
            window_end = seg_start + timedelta(days=366)
            # Real readings in this segment, assuming for now that the offset holds until
            # window_end. After a fall-back, readings that already occurred before it are
            # second occurrences: fixed-time schedules skip them.
            lo = seg_start + (max(offset, prev_offset) if fixed else offset)
            wall = expr._first_wall(_after(t + offset, lo), window_end + offset)
            real = None if wall is None else wall - offset
            # Look for offset changes only up to that candidate.
            change = _first_change(zone, seg_start, window_end if real is None else real)
            seg_end = window_end if change is None else change[0]
            if real is not None and real < seg_end:
                best = _min(best, real)
            # Gap: readings [seg_start + prev, seg_start + offset) never occur; fixed-time
            # schedules read them with the offset before the gap, landing in
            # [seg_start, seg_start + gap).
            if fixed and offset > prev_offset:
                wall = expr._first_wall(
                    _after(t + prev_offset, seg_start + prev_offset), seg_start + offset
                )
                if wall is not None:
                    best = _min(best, wall - prev_offset)
            # Later segments only hold instants >= seg_end.
            if best is not None and best < seg_end:
                return best
            if change is not None:
                seg_start, prev_offset, offset = change
            else:
                seg_start, prev_offset = window_end, offset

    def iter_after(self, t: datetime) -> Iterator[datetime]:
        """Fire instants strictly after ``t``, in order, without end."""
        cursor = _check_aware(t, "iter_after(t)")
        while True:
            cursor = self._next_after_utc(cursor)
            yield cursor.replace(tzinfo=UTC)

    def fires_between(self, start: datetime, end: datetime) -> list[datetime]:
        """Fire instants in (start, end]: start exclusive, end inclusive."""
        stop = _check_aware(end, "fires_between(end)").replace(tzinfo=UTC)
        _check_aware(start, "fires_between(start)")
        out: list[datetime] = []
        for fire in self.iter_after(start):
            if fire > stop:
                break
            out.append(fire)
        return out

    def local(self, t: datetime) -> datetime:
        """An instant (e.g. a fire instant) on this schedule's local clock."""
        _check_aware(t, "local(t)")
        return t.astimezone(self._zone)

    def period_hint(self) -> timedelta:
        """Approximate interval between fires, for defaults such as a catch-up window.

        It is the smallest gap between consecutive fires on a plain wall clock (DST
        ignored): ``*/15 * * * *`` gives 15 minutes, ``30 2 * * 1-5`` one day,
        ``@monthly`` 28 days.
        """
        return self._expr.nominal_period()


def _after(strict_lower: datetime, inclusive_lower: datetime) -> datetime:
    """The smallest second-resolution reading > strict_lower and >= inclusive_lower."""
    if strict_lower.microsecond:
        strict = strict_lower.replace(microsecond=0) + _ONE_SECOND
    else:
        strict = strict_lower + _ONE_SECOND
    return max(strict, inclusive_lower)


def _min(a: datetime | None, b: datetime) -> datetime:
    return b if a is None or b < a else a
