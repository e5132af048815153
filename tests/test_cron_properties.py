"""Property tests: CronSchedule.next_after against a brute-force reference.

The reference here shares no code with shiftwork.schedules.cron. It is slow on purpose:

* frequency schedules (all 24 hours): walk real instants one minute (or, for 6-field
  expressions, one second) at a time and keep those whose local reading matches;
* fixed-time schedules: enumerate every local date and intended time, resolve each with
  ``datetime(..., tzinfo=zone, fold=0)``, then collect, sort and de-duplicate.

Random expressions are built from random field sets, rendered to text in the various
syntaxes (lists, ranges, steps, names, L, nL, n#k), and the sets themselves feed the
reference. Instants are biased towards DST transitions, found by scanning utcoffset.
"""

from __future__ import annotations

import functools
import zoneinfo
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from itertools import islice, product

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from shiftwork.schedules.cron import CronError, CronSchedule

MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
DAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]

FAVOURITE_ZONES = [
    "America/New_York",
    "Europe/London",
    "Australia/Lord_Howe",
    "Pacific/Chatham",
    "America/Sao_Paulo",
    "Asia/Kolkata",
    "Europe/Berlin",
    "America/Santiago",
    "Africa/Casablanca",
]
REJECTED_ZONES = {"EST", "MST", "HST", "CET", "EET", "MET", "WET", "localtime", "posixrules"}
ALL_ZONES = sorted(set(zoneinfo.available_timezones()) - REJECTED_ZONES)

FIRST_YEAR, LAST_YEAR = 1980, 2037  # whole-minute offsets everywhere in this span


# --------------------------------------------------------------------------------------
# the reference
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Spec:
    """What an expression means, independent of how it was written."""

    text: str
    seconds: frozenset[int]
    minutes: frozenset[int]
    hours: frozenset[int]
    doms: frozenset[int]
    months: frozenset[int]
    dows: frozenset[int]  # 0 = Sunday
    last_dom: bool
    last_dows: frozenset[int]
    nth_dows: frozenset[tuple[int, int]]
    dom_star: bool
    dow_star: bool
    six_fields: bool

    @property
    def frequency(self) -> bool:
        return self.hours == frozenset(range(24))


def ref_date_matches(spec: Spec, d: date) -> bool:
    if d.month not in spec.months:
        return False
    weekday = d.isoweekday() % 7
    last_of_month = (d + timedelta(days=1)).month != d.month
    last_week = (d + timedelta(days=7)).month != d.month
    dom = d.day in spec.doms or (spec.last_dom and last_of_month)
    dow = (
        weekday in spec.dows
        or (weekday in spec.last_dows and last_week)
        or (weekday, (d.day + 6) // 7) in spec.nth_dows
    )
    return (dom and dow) if (spec.dom_star or spec.dow_star) else (dom or dow)


def ref_reading_matches(spec: Spec, local: datetime) -> bool:
    return (
        local.second in spec.seconds
        and local.minute in spec.minutes
        and local.hour in spec.hours
        and ref_date_matches(spec, local.date())
    )


def ref_fires(spec: Spec, tz: str, start: datetime, end: datetime, limit: int) -> list[datetime]:
    """Fire instants in (start, end], at most `limit` of them (the earliest)."""
    zone = zoneinfo.ZoneInfo(tz)
    if spec.frequency:
        step = timedelta(seconds=1) if spec.six_fields else timedelta(minutes=1)
        # Offsets are whole minutes here, so readings with second 0 are at UTC minutes.
        u = start.replace(second=0, microsecond=0) if not spec.six_fields else start
        u = u.replace(microsecond=0)
        out: list[datetime] = []
        while u <= end and len(out) < limit:
            if u > start and ref_reading_matches(spec, u.astimezone(zone)):
                out.append(u)
            u += step
        return out
    found: set[datetime] = set()
    day = start.astimezone(zone).date() - timedelta(days=2)
    last_day = end.astimezone(zone).date() + timedelta(days=2)
    times = sorted(product(spec.hours, spec.minutes, spec.seconds))
    while day <= last_day:
        if ref_date_matches(spec, day):
            for h, m, s in times:
                instant = datetime.combine(day, time(h, m, s, fold=0), tzinfo=zone)
                instant = instant.astimezone(UTC)
                if start < instant <= end:
                    found.add(instant)
        day += timedelta(days=1)
    return sorted(found)[:limit]


def mine(spec: Spec, tz: str, start: datetime, end: datetime, limit: int) -> list[datetime]:
    sched = CronSchedule(spec.text, tz)
    out = []
    for fire in islice(sched.iter_after(start), limit):
        if fire > end:
            break
        out.append(fire)
    return out


# --------------------------------------------------------------------------------------
# transitions, found by scanning utcoffset (no shiftwork code involved)
# --------------------------------------------------------------------------------------


@functools.cache
def transitions(tz: str, year: int) -> tuple[datetime, ...]:
    """UTC instants in `year` where the zone's offset changes (daily scan, then bisect)."""
    zone = zoneinfo.ZoneInfo(tz)

    def offset(u: datetime) -> timedelta | None:
        return u.astimezone(zone).utcoffset()

    out = []
    u = datetime(year, 1, 1, tzinfo=UTC)
    stop = datetime(year + 1, 1, 1, tzinfo=UTC)
    off_u = offset(u)
    while u < stop:
        v = u + timedelta(hours=12)
        off_v = offset(v)
        if off_u != off_v:
            lo, hi = u, v
            while hi - lo > timedelta(seconds=1):
                mid = (lo + (hi - lo) / 2).replace(microsecond=0)
                if offset(mid) == off_u:
                    lo = mid
                else:
                    hi = mid
            out.append(hi)
        u, off_u = v, off_v
    return tuple(out)


# --------------------------------------------------------------------------------------
# strategies
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Field:
    text: str
    values: frozenset[int]


def plain_field(
    lo: int, hi: int, names: list[str] | None = None, *, dow: bool = False
) -> st.SearchStrategy[Field]:
    """Field texts for a numeric field in one of the cron syntaxes, with their value sets."""
    star_hi = 6 if dow else hi  # "*" and "a/n" stop at Saturday

    def norm(values: range | list[int]) -> frozenset[int]:
        return frozenset(v % 7 if dow else v for v in values)

    @st.composite
    def build(draw: st.DrawFn) -> Field:
        def show(v: int, *, named: bool = True) -> str:
            if names and named and draw(st.booleans()):
                n = names[v % 7] if dow else names[v - lo]
                return draw(st.sampled_from([n, n.lower(), n.title()]))
            return str(v)

        kind = draw(st.sampled_from(["star", "value", "list", "range", "step", "range_step"]))
        if kind == "star":
            return Field("*", norm(range(lo, star_hi + 1)))
        if kind == "value":
            v = draw(st.integers(lo, hi))
            return Field(show(v), norm([v]))
        if kind == "list":
            vs = draw(st.lists(st.integers(lo, hi), min_size=1, max_size=4, unique=True))
            return Field(",".join(show(v) for v in vs), norm(vs))
        if kind == "range":
            a = draw(st.integers(lo, hi))
            b = draw(st.integers(a, hi))
            # A named SUN starts a range as 0 and ends one as 7 only after a later day.
            text = f"{show(a, named=a != 7)}-{show(b, named=not (b == 7 and a == 0))}"
            return Field(text, norm(range(a, b + 1)))
        step = draw(st.integers(1, max(1, (star_hi - lo + 1) // 2)))
        if kind == "step":
            if draw(st.booleans()):
                return Field(f"*/{step}", norm(range(lo, star_hi + 1, step)))
            a = draw(st.integers(lo, star_hi))
            return Field(f"{a}/{step}", norm(range(a, star_hi + 1, step)))
        a = draw(st.integers(lo, hi))
        b = draw(st.integers(a, hi))
        return Field(f"{a}-{b}/{step}", norm(range(a, b + 1, step)))

    return build()


def simple_spec(text: str, minutes: set[int], hours: set[int]) -> Spec:
    """Spec of 'M H * * *'."""
    return Spec(
        text=text,
        seconds=frozenset({0}),
        minutes=frozenset(minutes),
        hours=frozenset(hours),
        doms=frozenset(range(1, 32)),
        months=frozenset(range(1, 13)),
        dows=frozenset(range(7)),
        last_dom=False,
        last_dows=frozenset(),
        nth_dows=frozenset(),
        dom_star=True,
        dow_star=True,
        six_fields=False,
    )


@dataclass(frozen=True)
class Focus:
    """An offset change and the local hours it touches."""

    instant: datetime
    hours: frozenset[int]


def focus_at(tz: str, instant: datetime) -> Focus:
    zone = zoneinfo.ZoneInfo(tz)
    before = (instant - timedelta(seconds=1)).astimezone(zone)
    after = instant.astimezone(zone)
    lo, hi = sorted([before.replace(tzinfo=None), after.replace(tzinfo=None)])
    hours = {lo.hour, hi.hour}
    h = lo
    while h < hi:  # every hour a gap skips or an overlap repeats
        hours.add(h.hour)
        h += timedelta(minutes=15)
    return Focus(instant, frozenset(hours))


def day_fields(draw: st.DrawFn) -> tuple[Field, bool, Field, set[int], set[tuple[int, int]]]:
    dom_kind = draw(st.sampled_from(["*", "*", "?", "plain", "L", "plain+L"]))
    last_dom = dom_kind in ("L", "plain+L")
    if dom_kind in ("*", "?"):
        dom = Field(dom_kind, frozenset(range(1, 32)))
    elif dom_kind == "L":
        dom = Field("L", frozenset())
    else:
        dom = draw(plain_field(1, 31))
        if dom_kind == "plain+L":
            dom = Field(dom.text + ",L", dom.values)

    dow_kind = draw(st.sampled_from(["*", "*", "?", "plain", "nL", "n#k", "mixed"]))
    last_dows: set[int] = set()
    nth: set[tuple[int, int]] = set()
    if dow_kind in ("*", "?"):
        dow = Field(dow_kind, frozenset(range(7)))
    else:
        parts: list[str] = []
        values: set[int] = set()
        if dow_kind in ("plain", "mixed"):
            f = draw(plain_field(0, 7, DAYS, dow=True))
            parts.append(f.text)
            values |= f.values
        if dow_kind in ("nL", "mixed"):
            n = draw(st.integers(0, 7))
            parts.append(f"{DAYS[n % 7] if draw(st.booleans()) else n}L")
            last_dows.add(n % 7)
        if dow_kind in ("n#k", "mixed"):
            n, k = draw(st.integers(0, 7)), draw(st.integers(1, 5))
            parts.append(f"{DAYS[n % 7] if draw(st.booleans()) else n}#{k}")
            nth.add((n % 7, k))
        dow = Field(",".join(parts), frozenset(values))
    return dom, last_dom, dow, last_dows, nth


@st.composite
def specs(draw: st.DrawFn, *, six_fields: bool, focus: Focus | None = None) -> Spec:
    frequent = draw(st.booleans())
    seconds = draw(plain_field(0, 59)) if six_fields else Field("", frozenset({0}))
    minutes = draw(plain_field(0, 59))
    hour_mode = "frequency" if frequent else draw(st.sampled_from(["focus", "focus", "23", "any"]))
    if hour_mode == "frequency":
        hours = Field(draw(st.sampled_from(["*", "0-23", "*/1"])), frozenset(range(24)))
    elif hour_mode == "focus" and focus is not None:
        # Fixed-time hours that include the hours the offset change skips or repeats.
        extra = draw(st.sets(st.integers(0, 23), max_size=3))
        chosen = sorted(focus.hours | extra)
        assume(len(chosen) < 24)
        hours = Field(",".join(map(str, chosen)), frozenset(chosen))
    elif hour_mode == "23":
        # All hours but one: still fixed-time.
        left_out = draw(st.integers(0, 23))
        if focus is not None:
            left_out = draw(st.sampled_from(sorted(set(range(24)) - focus.hours)))
        chosen = sorted(set(range(24)) - {left_out})
        hours = Field(",".join(map(str, chosen)), frozenset(chosen))
    else:
        hours = draw(plain_field(0, 23))
    if not frequent:
        assume(len(hours.values) < 24)
        # Keep the fixed-time enumeration small.
        assume(len(hours.values) * len(minutes.values) * len(seconds.values) <= 3000)

    if focus is not None and draw(st.integers(0, 3)) > 0:
        dom, last_dom, dow = (
            Field("*", frozenset(range(1, 32))),
            False,
            Field("*", frozenset(range(7))),
        )
        last_dows: set[int] = set()
        nth: set[tuple[int, int]] = set()
    else:
        dom, last_dom, dow, last_dows, nth = day_fields(draw)

    month_kinds = ["*", "*", "*", "plain"] if focus is not None else ["*", "plain"]
    if draw(st.sampled_from(month_kinds)) == "*":
        months = Field("*", frozenset(range(1, 13)))
    else:
        months = draw(plain_field(1, 12, MONTHS))

    fields = [minutes.text, hours.text, dom.text, months.text, dow.text]
    if six_fields:
        fields.insert(0, seconds.text)
    return Spec(
        text=" ".join(fields),
        seconds=seconds.values,
        minutes=minutes.values,
        hours=hours.values,
        doms=dom.values,
        months=months.values,
        dows=dow.values,
        last_dom=last_dom,
        last_dows=frozenset(last_dows),
        nth_dows=frozenset(nth),
        dom_star=dom.text.startswith(("*", "?")),
        dow_star=dow.text.startswith(("*", "?")),
        six_fields=six_fields,
    )


zones = st.one_of(
    st.sampled_from(FAVOURITE_ZONES),
    st.sampled_from(FAVOURITE_ZONES),
    st.sampled_from(FAVOURITE_ZONES),
    st.sampled_from(ALL_ZONES),
)


@st.composite
def focus_points(draw: st.DrawFn, tz: str) -> Focus | None:
    """Usually an offset change of `tz` in a random year; None for a plain random instant."""
    year = draw(st.integers(FIRST_YEAR, LAST_YEAR - 1))
    near = transitions(tz, year)
    if near and draw(st.integers(0, 3)) > 0:
        return focus_at(tz, draw(st.sampled_from(near)))
    return Focus(datetime(year, 1, 1, tzinfo=UTC), frozenset())


def start_near(draw: st.DrawFn, focus: Focus, lead: timedelta) -> datetime:
    """Up to `lead` before the focus (or a little after); anywhere in its year if no change."""
    if focus.hours:
        seconds = int(lead.total_seconds())
        if draw(st.integers(0, 4)) == 0:  # sometimes just after the change
            return focus.instant + timedelta(seconds=draw(st.integers(0, seconds // 4)))
        return focus.instant - timedelta(seconds=draw(st.integers(1, seconds)))
    offset = timedelta(days=draw(st.integers(0, 364)), seconds=draw(st.integers(0, 86399)))
    return focus.instant + offset


@dataclass(frozen=True)
class Case:
    spec: Spec
    tz: str
    start: datetime
    window: timedelta
    limit: int


@st.composite
def cases(draw: st.DrawFn, *, six_fields: bool) -> Case:
    tz = draw(zones)
    focus = draw(focus_points(tz))
    spec = draw(specs(six_fields=six_fields, focus=focus if focus.hours else None))
    if spec.frequency and six_fields:
        lead, window, limit = timedelta(minutes=20), timedelta(hours=3), 150
    elif spec.frequency:
        lead, window, limit = timedelta(hours=3), timedelta(hours=36), 200
    else:
        lead, window, limit = timedelta(days=1), timedelta(days=3), 300
    return Case(spec, tz, start_near(draw, focus, lead), window, limit)


def _check(case: Case) -> None:
    spec, tz, start = case.spec, case.tz, case.start
    try:
        CronSchedule(spec.text, tz)
    except CronError as exc:
        # The only acceptable refusal of a generated expression: one that never fires.
        assert "never fires" in str(exc), exc
        assume(False)
    end = start + case.window
    expected = ref_fires(spec, tz, start, end, case.limit)
    got = mine(spec, tz, start, end, case.limit)
    assert got == expected, (spec.text, tz, start)
    # Record what the example exercised (see --hypothesis-show-statistics).
    zone = zoneinfo.ZoneInfo(tz)
    last = expected[-1] if len(expected) == case.limit else end
    if start.astimezone(zone).utcoffset() != last.astimezone(zone).utcoffset():
        event("window spans an offset change")
    readings = [f.astimezone(zone).replace(tzinfo=None) for f in expected]
    if not expected:
        event("no fires in window")
    if spec.frequency and len(set(readings)) < len(readings):
        event("frequency: a repeated reading fired twice")
    times = set(product(spec.hours, spec.minutes, spec.seconds))
    if not spec.frequency and any((r.hour, r.minute, r.second) not in times for r in readings):
        event("fixed-time: a gap time fired shifted")


# --------------------------------------------------------------------------------------
# properties
# --------------------------------------------------------------------------------------


def _settings(n: int) -> Callable[[Callable[..., None]], Callable[..., None]]:
    return settings(
        max_examples=n,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


@_settings(150)
@given(case=cases(six_fields=False))
def test_next_after_matches_reference_minutes(case: Case) -> None:
    _check(case)


@_settings(60)
@given(case=cases(six_fields=True))
def test_next_after_matches_reference_seconds(case: Case) -> None:
    _check(case)


@_settings(60)
@given(data=st.data(), year=st.integers(1990, 2100))
def test_day_fields_over_a_whole_year(data: st.DataObject, year: int) -> None:
    """The day-of-month / month / day-of-week logic, one fire a day, over a year (UTC)."""
    dom, last_dom, dow, last_dows, nth = day_fields(data.draw)
    months = data.draw(plain_field(1, 12, MONTHS))
    spec = Spec(
        text=f"0 12 {dom.text} {months.text} {dow.text}",
        seconds=frozenset({0}),
        minutes=frozenset({0}),
        hours=frozenset({12}),
        doms=dom.values,
        months=months.values,
        dows=dow.values,
        last_dom=last_dom,
        last_dows=frozenset(last_dows),
        nth_dows=frozenset(nth),
        dom_star=dom.text.startswith(("*", "?")),
        dow_star=dow.text.startswith(("*", "?")),
        six_fields=False,
    )
    try:
        sched = CronSchedule(spec.text, "UTC")
    except CronError as exc:
        assert "never fires" in str(exc), exc
        # Check the claim over 2000-2027: every month starts on every weekday in these
        # 28 years, February in its leap and common forms alike.
        d = date(2000, 1, 1)
        while d < date(2028, 1, 1):
            assert not ref_date_matches(spec, d), (spec.text, d)
            d += timedelta(days=1)
        return
    start = datetime(year, 1, 1, tzinfo=UTC) - timedelta(seconds=1)
    end = datetime(year + 1, 1, 1, tzinfo=UTC)
    got = [f.date() for f in sched.fires_between(start, end)]
    d, expected = date(year, 1, 1), []
    while d.year == year:
        if ref_date_matches(spec, d):
            expected.append(d)
        d += timedelta(days=1)
    assert got == expected, spec.text


FIXED_CRONS = {
    "30 2 * * *": ({30}, {2}),
    "0,30 0-3 * * *": ({0, 30}, {0, 1, 2, 3}),
    "*/15 1-2 * * *": ({0, 15, 30, 45}, {1, 2}),
    "0 0 * * *": ({0}, {0}),
    "45 23 * * *": ({45}, {23}),
}


@_settings(100)
@given(data=st.data(), tz=zones, cron=st.sampled_from(sorted(FIXED_CRONS)))
def test_fixed_time_fires_once_per_intended_time(data: st.DataObject, tz: str, cron: str) -> None:
    """Each intended local time maps to one fire: fold=0, sorted, de-duplicated."""
    start = start_near(data.draw, data.draw(focus_points(tz)), timedelta(days=1))
    sched = CronSchedule(cron, tz)
    end = start + timedelta(days=2)
    fires = sched.fires_between(start, end)
    assert fires == sorted(set(fires))
    minutes, hours = FIXED_CRONS[cron]
    assert fires == ref_fires(simple_spec(cron, minutes, hours), tz, start, end, 10_000)


@_settings(100)
@given(data=st.data(), spec=specs(six_fields=False), tz=zones)
def test_next_after_is_strict_and_minimal(data: st.DataObject, spec: Spec, tz: str) -> None:
    """next_after(f - 1us) == f for every fire f, and next_after(previous fire) == f."""
    try:
        sched = CronSchedule(spec.text, tz)
    except CronError as exc:
        assert "never fires" in str(exc), exc
        assume(False)
        return
    start = start_near(data.draw, data.draw(focus_points(tz)), timedelta(days=2))
    prev = start
    for fire in islice(sched.iter_after(start), 5):
        assert fire > prev
        assert sched.next_after(fire - timedelta(microseconds=1)) == fire
        assert sched.next_after(prev) == fire
        prev = fire


def test_every_zone_around_its_2025_transitions() -> None:
    """For every zone, a fixed-time and a frequency schedule agree with the reference
    across each offset change in 2025 (and at midsummer for zones without any)."""
    not_noon = set(range(24)) - {12}
    fixed = simple_spec("0,30 0-11,13-23 * * *", {0, 30}, not_noon)
    frequency = simple_spec("*/30 * * * *", {0, 30}, set(range(24)))

    # Zones that agree on every offset in 2025 (links such as US/Eastern, and zones
    # sharing rules) behave identically here; check one of each.
    def behaviour(tz: str) -> tuple[object, ...]:
        zone = zoneinfo.ZoneInfo(tz)
        changes = transitions(tz, 2025)
        points = (datetime(2025, 1, 1, tzinfo=UTC), *changes)
        return tuple((p, p.astimezone(zone).utcoffset()) for p in points)

    representatives = {behaviour(tz): tz for tz in reversed(ALL_ZONES)}
    assert len(representatives) > 50
    checked = 0
    for tz in sorted(representatives.values()):
        points = transitions(tz, 2025) or (datetime(2025, 6, 21, tzinfo=UTC),)
        sched_fixed = CronSchedule(fixed.text, tz)
        sched_freq = CronSchedule(frequency.text, tz)
        for point in points:
            start = point - timedelta(hours=15)
            end = point + timedelta(hours=15)
            assert sched_fixed.fires_between(start, end) == ref_fires(
                fixed, tz, start, end, 10_000
            ), (tz, point)
            assert sched_freq.fires_between(start, end) == walk_quarter_hours(
                frequency, tz, start, end
            ), (tz, point)
            checked += 1
    assert checked >= len(representatives)


def walk_quarter_hours(spec: Spec, tz: str, start: datetime, end: datetime) -> list[datetime]:
    """Frequency reference in 15-minute steps: every offset in 2025 is a multiple of 15 min."""
    zone = zoneinfo.ZoneInfo(tz)
    out = []
    u = start.replace(minute=0, second=0, microsecond=0)
    while u <= end:
        local = u.astimezone(zone)
        assert local.utcoffset() is not None
        assert local.utcoffset() % timedelta(minutes=15) == timedelta(0)
        if start < u and ref_reading_matches(spec, local):
            out.append(u)
        u += timedelta(minutes=15)
    return out


@pytest.mark.parametrize("tz", FAVOURITE_ZONES)
def test_reference_sees_transitions_in_favourite_zones(tz: str) -> None:
    # Guards the bias: these zones really do change offset (Kolkata is the control).
    years = [y for y in range(2000, 2020) if transitions(tz, y)]
    assert bool(years) == (tz != "Asia/Kolkata")
