"""Interval schedules and excluded dates, against brute-force models (pure, no database)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from itertools import pairwise
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shiftwork.schedules.cron import CronError, CronSchedule
from shiftwork.schedules.interval import (
    DEFAULT_ANCHOR,
    Excluding,
    IntervalSchedule,
    expression,
    format_duration,
    parse_duration,
    timetable,
)

T0 = datetime(2026, 3, 1, tzinfo=UTC)
instants = st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2060, 1, 1),
                        timezones=st.just(UTC))
periods = st.integers(min_value=1, max_value=40 * 86400).map(lambda s: timedelta(seconds=s))


def brute_next(anchor: datetime, period: timedelta, t: datetime) -> datetime:
    """The model: step from the anchor, one period at a time, past t."""
    k = int((t - anchor) / period) - 2  # start a little early, then walk
    fire = anchor + k * period
    while fire <= t:
        fire += period
    return fire


@settings(max_examples=300, deadline=None)
@given(period=periods, anchor=instants, t=instants)
def test_next_after_is_the_first_anchored_instant_strictly_after(
        period: timedelta, anchor: datetime, t: datetime) -> None:
    sched = IntervalSchedule(period, anchor, "America/New_York")
    got = sched.next_after(t)
    assert got == brute_next(anchor, period, t)
    assert got > t and got - period <= t
    assert (got - anchor) % period == timedelta(0)


def test_an_interval_counts_elapsed_time_through_dst() -> None:
    """DST-neutral: across New York's spring-forward, 90 minutes stay 90 minutes (cron's
    wall-clock readings would not), and the local readings shift by the hour instead."""
    sched = IntervalSchedule(timedelta(minutes=90), DEFAULT_ANCHOR, "America/New_York")
    before = datetime(2026, 3, 8, 4, 0, tzinfo=UTC)  # 23:00 local, the night of the change
    fires = sched.fires_between(before, before + timedelta(hours=12))
    assert len(fires) == 8
    assert {b - a for a, b in pairwise(fires)} == {timedelta(minutes=90)}
    offsets = {sched.local(f).utcoffset() for f in fires}
    assert offsets == {timedelta(hours=-5), timedelta(hours=-4)}


def test_every_host_and_deploy_computes_the_same_instants() -> None:
    a = timetable("every 90m", "UTC")
    b = timetable("every 90m", "Europe/Paris")  # the zone changes readings, not instants
    assert a.next_after(T0) == b.next_after(T0) == datetime(2026, 3, 1, 1, 30, tzinfo=UTC)
    shifted = timetable("every 90m from 2026-01-01T00:10:00Z", "UTC")
    assert shifted.next_after(T0) == datetime(2026, 3, 1, 0, 10, tzinfo=UTC)


@pytest.mark.parametrize(("text", "seconds"), [
    ("90m", 5400), ("1h30m", 5400), ("36h", 129600), ("2w", 1209600), ("1d12h", 129600),
    ("45s", 45), ("1h 30m", 5400)])
def test_durations(text: str, seconds: int) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)
    assert parse_duration(format_duration(timedelta(seconds=seconds))) == timedelta(
        seconds=seconds)


@pytest.mark.parametrize(("text", "message"), [
    ("", "whole units"), ("90", "whole units"), ("1.5h", "whole units"), ("90x", "whole units"),
    ("30m1h", "largest first"), ("1h1h", "each unit once"), ("-5m", "whole units")])
def test_bad_durations_say_how_to_write_one(text: str, message: str) -> None:
    with pytest.raises(CronError, match=message):
        parse_duration(text)


def test_bad_expressions_name_the_problem() -> None:
    with pytest.raises(CronError, match="must carry an offset"):
        timetable("every 1h from 2026-01-01T00:00:00", "UTC")
    with pytest.raises(CronError, match="bad interval anchor"):
        timetable("every 1h from yesterday", "UTC")
    with pytest.raises(CronError, match="at least"):
        timetable("every 0s", "UTC")
    with pytest.raises(CronError, match="bad excluded date"):
        timetable("0 2 * * * except 2026-13-01", "UTC")
    with pytest.raises(CronError, match="not both and not neither"):
        expression("0 2 * * *", every="1h")
    with pytest.raises(CronError, match="not both and not neither"):
        expression()
    with pytest.raises(CronError, match="anchor= is for every="):
        expression("0 2 * * *", anchor=T0)
    with pytest.raises(CronError, match="not the instant"):
        expression("0 2 * * *", exclude=[T0])
    with pytest.raises(CronError, match="time zone"):
        expression(every="1h", anchor=datetime(2026, 1, 1))


def test_expressions_are_canonical() -> None:
    assert expression(every="90m") == "every 1h30m"
    assert expression(every=timedelta(hours=36), anchor=datetime(
        2026, 1, 1, 6, tzinfo=ZoneInfo("Europe/Paris"))) == "every 1d12h from 2026-01-01T05:00:00Z"
    assert expression("0 2 * * *", exclude=["2027-01-01", date(2026, 12, 25)]) == \
        "0 2 * * * except 2026-12-25,2027-01-01"
    assert expression("0 2 * * *", exclude="2026-12-25") == "0 2 * * * except 2026-12-25"


@settings(max_examples=150, deadline=None)
@given(t=st.datetimes(min_value=datetime(2026, 1, 1), max_value=datetime(2027, 12, 1),
                      timezones=st.just(UTC)),
       excluded=st.sets(st.dates(min_value=date(2026, 1, 1), max_value=date(2028, 1, 1)),
                        max_size=40))
def test_excluded_dates_are_the_model_minus_those_days(t: datetime, excluded: set[date]
                                                        ) -> None:
    """The model: every cron fire after t, without those whose local date is excluded."""
    base = CronSchedule("30 2 * * *", "Europe/Berlin")
    sched = Excluding(base, frozenset(excluded))
    model = (f for f in base.iter_after(t) if base.local(f).date() not in excluded)
    got = sched.iter_after(t)
    for _ in range(5):
        assert next(got) == next(model)


def test_an_excluded_day_is_read_on_the_schedules_calendar() -> None:
    """Christmas in Tokyo begins at 15:00 UTC on the 24th."""
    sched = timetable("0 * * * * except 2026-12-25", "Asia/Tokyo")
    start = datetime(2026, 12, 24, 13, 30, tzinfo=UTC)
    fires = sched.fires_between(start, start + timedelta(hours=30))
    assert fires[0] == datetime(2026, 12, 24, 14, 0, tzinfo=UTC)  # 23:00 on the 24th
    assert fires[1] == datetime(2026, 12, 25, 15, 0, tzinfo=UTC)  # 00:00 on the 26th
    assert timetable("every 1h except 2026-12-25", "Asia/Tokyo").next_after(
        datetime(2026, 12, 24, 14, 30, tzinfo=UTC)) == datetime(2026, 12, 25, 15, 0, tzinfo=UTC)


def test_too_many_excluded_dates_are_refused() -> None:
    every_day = ",".join((date(2026, 1, 1) + timedelta(days=i)).isoformat() for i in range(366))
    with pytest.raises(CronError, match="at most 1000 excluded dates"):
        timetable("0 2 1 1 * except " + every_day + "," + every_day.replace("2026", "2028")
                  + "," + every_day.replace("2026", "2030"), "UTC")


# -- declared on an App, fired by the leader (both engines) -------------------------------

def test_an_interval_schedule_fires_at_its_anchored_instants(
        make_app: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from shiftwork import FakeClock
    from shiftwork.schedules.scheduler import reconcile

    from .test_schedule_policies import leader_pass, statuses

    start = datetime(2026, 3, 8, 4, 10, tzinfo=UTC)  # New York's spring-forward night
    clock = FakeClock(start)
    app = make_app(clock=clock)
    noop = app.task(name="noop")(lambda: None)
    app.schedule("sync", every="90m", task=noop, tz="America/New_York",
                 exclude=["2026-03-09"], catchup="all", overlap="allow_all")
    reconcile(app.runtime)
    clock.set(start + timedelta(hours=6))
    leader_pass(app)  # the hours since the start: caught up, 90 minutes apart
    fired = statuses(app, "sync")["enqueued"]
    assert fired == [datetime(2026, 3, 8, 4, 30, tzinfo=UTC) + k * timedelta(minutes=90)
                     for k in range(4)]
    # The 9th (local) is excluded: from 04:00Z on the 9th (00:00 EDT) to the 10th nothing.
    clock.set(datetime(2026, 3, 10, 5, 0, tzinfo=UTC))
    leader_pass(app)
    local_days = {f.astimezone(ZoneInfo("America/New_York")).date()
                  for s in statuses(app, "sync").values() for f in s}
    assert date(2026, 3, 9) not in local_days and date(2026, 3, 10) in local_days


def test_bad_interval_declarations_are_refused_where_written(make_app: Any) -> None:
    from shiftwork import ConfigurationError

    app = make_app()
    noop = app.task(name="noop")(lambda: None)
    with pytest.raises(CronError, match="bad interval '90'"):
        app.schedule("a", every="90", task=noop)
    with pytest.raises(CronError, match="not both"):
        app.schedule("b", "0 2 * * *", noop, every="1h")
    with pytest.raises(ConfigurationError, match="give the task"):
        app.schedule("c", every="1h")
    with pytest.raises(CronError, match="bad excluded date"):
        app.schedule("d", "0 2 * * *", noop, exclude=["Christmas"])
    assert app.schedule("e", "every 2h except 2026-12-25", noop).cron == \
        "every 2h except 2026-12-25"  # the expression itself says it too
