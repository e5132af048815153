"""Cron parsing and fire instants (policy shiftwork-dst-v1).

The worked cases in ``tests/data/schedule_examples.json`` come first; then cases of the same
kinds written for this module (expected instants worked out by hand from the zone rules),
then parse errors.
"""

from __future__ import annotations

import json
import time
import zoneinfo
from datetime import UTC, datetime, timedelta, timezone
from itertools import islice, pairwise
from pathlib import Path
from typing import Any

import pytest

from shiftwork.core.errors import ShiftworkError
from shiftwork.schedules.cron import MACROS, CronError, CronExpression, CronSchedule

# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------


def _examples_path() -> Path:
    # The worked examples travel with the tests (a copy of shared/schedule_examples.json).
    return Path(__file__).resolve().parent / "data" / "schedule_examples.json"


def _load_examples() -> dict[str, Any]:
    path = _examples_path()
    if not path.is_file():  # a missing file is a failure, never a skip
        raise FileNotFoundError(
            f"worked examples not found at {path}"
        )
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


_EXAMPLES = _load_examples()


def utc(text: str) -> datetime:
    """Parse '2025-03-09T07:30:00Z' (or with an offset) into an aware datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def z(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def first(cron: str, tz: str, after: str, n: int) -> list[datetime]:
    return list(islice(CronSchedule(cron, tz).iter_after(utc(after)), n))


def check(cron: str, tz: str, after: str, expected: list[tuple[str, str]]) -> None:
    """expected: (UTC instant, local ISO string) for the first len(expected) fires."""
    sched = CronSchedule(cron, tz)
    fires = list(islice(sched.iter_after(utc(after)), len(expected)))
    assert [(z(f), sched.local(f).isoformat()) for f in fires] == expected


# --------------------------------------------------------------------------------------
# the shared worked examples
# --------------------------------------------------------------------------------------


def test_examples_file_is_the_expected_policy() -> None:
    assert _EXAMPLES["policy"] == "shiftwork-dst-v1"
    assert len(_EXAMPLES["cases"]) == 13


@pytest.mark.parametrize("case", _EXAMPLES["cases"], ids=lambda c: str(c["id"]))
def test_worked_example(case: dict[str, Any]) -> None:
    sched = CronSchedule(case["cron"], case["tz"])
    n = len(case["expect_next_utc"])
    fires = list(islice(sched.iter_after(utc(case["after"])), n))
    assert [z(f) for f in fires] == case["expect_next_utc"]
    assert [sched.local(f).isoformat() for f in fires] == case["expect_next_local"]
    # next_after agrees with iter_after, and every result is aware UTC.
    cursor = utc(case["after"])
    for fire in fires:
        nxt = sched.next_after(cursor)
        assert nxt == fire
        assert nxt.tzinfo is UTC
        cursor = nxt


# --------------------------------------------------------------------------------------
# DST, fixed-time class
# --------------------------------------------------------------------------------------


def test_new_york_gap_times_shift_later_and_merge() -> None:
    # 02:00 does not exist on 2025-03-09: it reads as 02:00 EST = 03:00 EDT, the same
    # instant as the 03:00 occurrence, which fires once.
    check(
        "0 1-3 * * *",
        "America/New_York",
        "2025-03-09T05:00:00Z",
        [
            ("2025-03-09T06:00:00Z", "2025-03-09T01:00:00-05:00"),
            ("2025-03-09T07:00:00Z", "2025-03-09T03:00:00-04:00"),
            ("2025-03-10T05:00:00Z", "2025-03-10T01:00:00-04:00"),
            ("2025-03-10T06:00:00Z", "2025-03-10T02:00:00-04:00"),
        ],
    )


def test_fire_order_differs_from_local_order_in_a_gap() -> None:
    # Intended 02:00, 02:15, 02:30, 02:45, 03:00, 03:15: the gap times become 03:00..03:45
    # EDT, so the fire order interleaves them with 03:00 and 03:15.
    sched = CronSchedule("0,15,30,45 2,3 * * *", "America/New_York")
    fires = sched.fires_between(utc("2025-03-09T05:00:00Z"), utc("2025-03-09T12:00:00Z"))
    assert [sched.local(f).strftime("%H:%M%z") for f in fires] == [
        "03:00-0400",  # 02:00 and 03:00
        "03:15-0400",  # 02:15 and 03:15
        "03:30-0400",  # 02:30 and 03:30
        "03:45-0400",  # 02:45 and 03:45
    ]


def test_new_york_fall_back_fires_once_at_first_instant() -> None:
    check(
        "0 1-3 * * *",
        "America/New_York",
        "2025-11-02T04:00:00Z",
        [
            ("2025-11-02T05:00:00Z", "2025-11-02T01:00:00-04:00"),
            ("2025-11-02T07:00:00Z", "2025-11-02T02:00:00-05:00"),
            ("2025-11-02T08:00:00Z", "2025-11-02T03:00:00-05:00"),
            ("2025-11-03T06:00:00Z", "2025-11-03T01:00:00-05:00"),
        ],
    )
    # Asking from inside the repeated hour (after the first 01:00) does not refire 01:xx.
    sched = CronSchedule("30 1 * * *", "America/New_York")
    assert z(sched.next_after(utc("2025-11-02T05:45:00Z"))) == "2025-11-03T06:30:00Z"
    assert z(sched.next_after(utc("2025-11-02T06:15:00Z"))) == "2025-11-03T06:30:00Z"


def test_lord_howe_half_hour_gap() -> None:
    # Lord Howe springs forward 02:00 -> 02:30 on 2025-10-05: 02:15 fires at 02:45 +11.
    check(
        "15 2 * * *",
        "Australia/Lord_Howe",
        "2025-10-03T00:00:00Z",
        [
            ("2025-10-03T15:45:00Z", "2025-10-04T02:15:00+10:30"),
            ("2025-10-04T15:45:00Z", "2025-10-05T02:45:00+11:00"),
            ("2025-10-05T15:15:00Z", "2025-10-06T02:15:00+11:00"),
        ],
    )


def test_lord_howe_half_hour_overlap_fixed_time() -> None:
    # 01:30-02:00 repeats on 2025-04-06; 01:30 and 01:45 fire once each, at +11:00.
    check(
        "30,45 1 * * *",
        "Australia/Lord_Howe",
        "2025-04-05T12:00:00Z",
        [
            ("2025-04-05T14:30:00Z", "2025-04-06T01:30:00+11:00"),
            ("2025-04-05T14:45:00Z", "2025-04-06T01:45:00+11:00"),
            ("2025-04-06T15:00:00Z", "2025-04-07T01:30:00+10:30"),
        ],
    )


def test_chatham_gap_and_overlap() -> None:
    # Chatham springs forward 02:45 -> 03:45 on 2025-09-28: 03:00 fires at 04:00 +13:45.
    check(
        "0 3 * * *",
        "Pacific/Chatham",
        "2025-09-26T00:00:00Z",
        [
            ("2025-09-26T14:15:00Z", "2025-09-27T03:00:00+12:45"),
            ("2025-09-27T14:15:00Z", "2025-09-28T04:00:00+13:45"),
            ("2025-09-28T13:15:00Z", "2025-09-29T03:00:00+13:45"),
        ],
    )
    # 02:30 is before the gap: unaffected.
    check(
        "30 2 * * *",
        "Pacific/Chatham",
        "2025-09-26T00:00:00Z",
        [
            ("2025-09-26T13:45:00Z", "2025-09-27T02:30:00+12:45"),
            ("2025-09-27T13:45:00Z", "2025-09-28T02:30:00+12:45"),
            ("2025-09-28T12:45:00Z", "2025-09-29T02:30:00+13:45"),
        ],
    )


def test_sao_paulo_midnight_gap_2018() -> None:
    # 2018-11-04 00:00 -> 01:00: midnight does not exist; @daily fires at 01:00 -02.
    check(
        "@daily",
        "America/Sao_Paulo",
        "2018-11-02T12:00:00Z",
        [
            ("2018-11-03T03:00:00Z", "2018-11-03T00:00:00-03:00"),
            ("2018-11-04T03:00:00Z", "2018-11-04T01:00:00-02:00"),
            ("2018-11-05T02:00:00Z", "2018-11-05T00:00:00-02:00"),
        ],
    )


def test_several_intended_times_on_one_instant_fire_once() -> None:
    # 00:00 and 01:00 on 2018-11-04 are one instant (00:00 reads as 01:00 -02), as are
    # 00:30 and 01:30.
    check(
        "0,30 0,1 * * *",
        "America/Sao_Paulo",
        "2018-11-03T12:00:00Z",
        [
            ("2018-11-04T03:00:00Z", "2018-11-04T01:00:00-02:00"),
            ("2018-11-04T03:30:00Z", "2018-11-04T01:30:00-02:00"),
            ("2018-11-05T02:00:00Z", "2018-11-05T00:00:00-02:00"),
            ("2018-11-05T02:30:00Z", "2018-11-05T00:30:00-02:00"),
        ],
    )


def test_sao_paulo_midnight_fall_back_2018_fixed_time() -> None:
    # 2018-02-18 00:00 -02 -> 2018-02-17 23:00 -03: 23:00 on the 17th fires once (-02).
    check(
        "0 23 * * *",
        "America/Sao_Paulo",
        "2018-02-16T12:00:00Z",
        [
            ("2018-02-17T01:00:00Z", "2018-02-16T23:00:00-02:00"),
            ("2018-02-18T01:00:00Z", "2018-02-17T23:00:00-02:00"),
            ("2018-02-19T02:00:00Z", "2018-02-18T23:00:00-03:00"),
        ],
    )


def test_london_gap() -> None:
    # 2025-03-30 01:00 -> 02:00 in London; 02:00 and 02:30 exist (BST) and are unaffected.
    check(
        "30 1 * * *",
        "Europe/London",
        "2025-03-29T12:00:00Z",
        [
            ("2025-03-30T01:30:00Z", "2025-03-30T02:30:00+01:00"),
            ("2025-03-31T00:30:00Z", "2025-03-31T01:30:00+01:00"),
        ],
    )


# --------------------------------------------------------------------------------------
# DST, frequency class
# --------------------------------------------------------------------------------------


def test_frequency_fires_twice_in_fall_back_hour() -> None:
    check(
        "*/30 * * * *",
        "America/New_York",
        "2025-11-02T04:45:00Z",
        [
            ("2025-11-02T05:00:00Z", "2025-11-02T01:00:00-04:00"),
            ("2025-11-02T05:30:00Z", "2025-11-02T01:30:00-04:00"),
            ("2025-11-02T06:00:00Z", "2025-11-02T01:00:00-05:00"),
            ("2025-11-02T06:30:00Z", "2025-11-02T01:30:00-05:00"),
            ("2025-11-02T07:00:00Z", "2025-11-02T02:00:00-05:00"),
        ],
    )


def test_frequency_skips_gap_readings() -> None:
    check(
        "*/30 * * * *",
        "America/New_York",
        "2025-03-09T06:15:00Z",
        [
            ("2025-03-09T06:30:00Z", "2025-03-09T01:30:00-05:00"),
            ("2025-03-09T07:00:00Z", "2025-03-09T03:00:00-04:00"),
            ("2025-03-09T07:30:00Z", "2025-03-09T03:30:00-04:00"),
        ],
    )
    # Every minute: 60 fewer fires on spring-forward day, 60 more on fall-back day.
    sched = CronSchedule("* * * * *", "America/New_York")
    spring = sched.fires_between(utc("2025-03-09T05:00:00Z"), utc("2025-03-10T04:00:00Z"))
    fall = sched.fires_between(utc("2025-11-02T04:00:00Z"), utc("2025-11-03T05:00:00Z"))
    assert len(spring) == 23 * 60
    assert len(fall) == 25 * 60
    assert all(b - a == timedelta(minutes=1) for a, b in pairwise(spring))


def test_frequency_lord_howe_half_hour_overlap() -> None:
    check(
        "*/15 * * * *",
        "Australia/Lord_Howe",
        "2025-04-05T14:20:00Z",
        [
            ("2025-04-05T14:30:00Z", "2025-04-06T01:30:00+11:00"),
            ("2025-04-05T14:45:00Z", "2025-04-06T01:45:00+11:00"),
            ("2025-04-05T15:00:00Z", "2025-04-06T01:30:00+10:30"),
            ("2025-04-05T15:15:00Z", "2025-04-06T01:45:00+10:30"),
            ("2025-04-05T15:30:00Z", "2025-04-06T02:00:00+10:30"),
        ],
    )


def test_frequency_sao_paulo_repeated_2300() -> None:
    check(
        "0 * * * *",
        "America/Sao_Paulo",
        "2018-02-17T23:30:00Z",
        [
            ("2018-02-18T00:00:00Z", "2018-02-17T22:00:00-02:00"),
            ("2018-02-18T01:00:00Z", "2018-02-17T23:00:00-02:00"),
            ("2018-02-18T02:00:00Z", "2018-02-17T23:00:00-03:00"),
            ("2018-02-18T03:00:00Z", "2018-02-18T00:00:00-03:00"),
        ],
    )


def test_hours_star_step_one_is_frequency_but_a_subset_is_not() -> None:
    assert CronExpression.parse("0 * * * *").is_frequency
    assert CronExpression.parse("0 0-23 * * *").is_frequency
    assert CronExpression.parse("0 */1 * * *").is_frequency
    assert CronExpression.parse("@hourly").is_frequency
    assert not CronExpression.parse("0 */2 * * *").is_frequency
    assert not CronExpression.parse("*/30 2 * * *").is_frequency
    assert not CronExpression.parse("@daily").is_frequency
    assert not CronExpression.parse("0 1-23 * * *").is_frequency


def test_twenty_three_hours_is_fixed_time() -> None:
    # Leaving out one hour makes the schedule fixed-time: the repeated 01:00 fires once.
    fixed = CronSchedule("0 0-22 * * *", "America/New_York")
    frequency = CronSchedule("0 * * * *", "America/New_York")
    start, end = utc("2025-11-02T04:30:00Z"), utc("2025-11-02T07:30:00Z")
    assert [z(f) for f in fixed.fires_between(start, end)] == [
        "2025-11-02T05:00:00Z",  # 01:00 EDT
        "2025-11-02T07:00:00Z",  # 02:00 EST
    ]
    assert [z(f) for f in frequency.fires_between(start, end)] == [
        "2025-11-02T05:00:00Z",  # 01:00 EDT
        "2025-11-02T06:00:00Z",  # 01:00 EST
        "2025-11-02T07:00:00Z",  # 02:00 EST
    ]


# --------------------------------------------------------------------------------------
# calendar features
# --------------------------------------------------------------------------------------


def test_31st_of_the_month_skips_short_months() -> None:
    fires = first("0 0 31 * *", "UTC", "2025-01-01T00:00:00Z", 7)
    assert [f.date().isoformat() for f in fires] == [
        "2025-01-31",
        "2025-03-31",
        "2025-05-31",
        "2025-07-31",
        "2025-08-31",
        "2025-10-31",
        "2025-12-31",
    ]


def test_feb_29_only_in_leap_years() -> None:
    fires = first("0 12 29 2 *", "Europe/Berlin", "2024-03-01T00:00:00Z", 3)
    assert [z(f) for f in fires] == [
        "2028-02-29T11:00:00Z",
        "2032-02-29T11:00:00Z",
        "2036-02-29T11:00:00Z",
    ]
    # 2100 is not a leap year.
    fires = first("0 0 29 2 *", "UTC", "2096-03-01T00:00:00Z", 1)
    assert z(fires[0]) == "2104-02-29T00:00:00Z"


def test_dom_or_dow_when_both_restricted() -> None:
    # 15th OR Sunday.
    fires = first("0 0 15 * SUN", "UTC", "2025-06-01T00:00:00Z", 4)
    assert [f.date().isoformat() for f in fires] == [
        "2025-06-08",
        "2025-06-15",  # both
        "2025-06-22",
        "2025-06-29",
    ]
    fires = first("0 0 16 * 0", "UTC", "2025-06-01T00:00:00Z", 3)
    assert [f.date().isoformat() for f in fires] == ["2025-06-08", "2025-06-15", "2025-06-16"]


def test_dom_and_dow_when_one_is_a_wildcard() -> None:
    # "*/2" starts with "*": AND. Odd days that are Mondays.
    fires = first("0 0 */2 * 1", "UTC", "2025-06-01T00:00:00Z", 3)
    assert [f.date().isoformat() for f in fires] == ["2025-06-09", "2025-06-23", "2025-07-07"]
    # "?" in day-of-week: only the day-of-month counts.
    fires = first("0 0 13 * ?", "UTC", "2025-06-01T00:00:00Z", 2)
    assert [f.date().isoformat() for f in fires] == ["2025-06-13", "2025-07-13"]
    expr = CronExpression.parse("0 0 13 * ?")
    assert expr.dow_wildcard and not expr.dom_wildcard


def test_seconds_field_comes_first() -> None:
    expr = CronExpression.parse("15,45 30 9 * * *")
    assert expr.has_seconds
    assert expr.seconds == {15, 45}
    assert expr.minutes == {30}
    assert expr.hours == {9}
    assert not CronExpression.parse("30 9 * * *").has_seconds
    assert CronExpression.parse("30 9 * * *").seconds == {0}
    fires = first("15,45 30 9 * * *", "UTC", "2025-01-01T09:30:15Z", 3)
    assert [z(f) for f in fires] == [
        "2025-01-01T09:30:45Z",
        "2025-01-02T09:30:15Z",
        "2025-01-02T09:30:45Z",
    ]


def test_seconds_frequency_across_fall_back() -> None:
    # Every 20 s in the repeated hour: both passes fire.
    sched = CronSchedule("*/20 59 * * * *", "America/New_York")
    fires = sched.fires_between(utc("2025-11-02T05:00:00Z"), utc("2025-11-02T07:00:00Z"))
    assert [sched.local(f).strftime("%H:%M:%S%z") for f in fires] == [
        "01:59:00-0400",
        "01:59:20-0400",
        "01:59:40-0400",
        "01:59:00-0500",
        "01:59:20-0500",
        "01:59:40-0500",
    ]


def test_last_day_of_month() -> None:
    fires = first("0 0 L * *", "UTC", "2024-01-15T00:00:00Z", 4)
    assert [f.date().isoformat() for f in fires] == [
        "2024-01-31",
        "2024-02-29",
        "2024-03-31",
        "2024-04-30",
    ]
    expr = CronExpression.parse("0 0 1,L * *")
    assert expr.last_day_of_month and expr.days_of_month == {1}


def test_last_weekday_of_month() -> None:
    # 5L: last Friday.
    fires = first("0 0 * * 5L", "UTC", "2025-01-01T00:00:00Z", 4)
    assert [f.date().isoformat() for f in fires] == [
        "2025-01-31",
        "2025-02-28",
        "2025-03-28",
        "2025-04-25",
    ]
    assert CronExpression.parse("0 0 * * FRIL").last_weekdays == {5}
    assert CronExpression.parse("0 0 * * 7L").last_weekdays == {0}


def test_nth_weekday_of_month() -> None:
    # 1#1: first Monday; 0#5 and 7#5: fifth Sunday (only some months).
    fires = first("0 0 * * 1#1", "UTC", "2025-01-01T00:00:00Z", 3)
    assert [f.date().isoformat() for f in fires] == ["2025-01-06", "2025-02-03", "2025-03-03"]
    fires = first("0 0 * * 7#5", "UTC", "2025-01-01T00:00:00Z", 3)
    assert [f.date().isoformat() for f in fires] == ["2025-03-30", "2025-06-29", "2025-08-31"]
    assert CronExpression.parse("0 0 * * SUN#5").nth_weekdays == {(0, 5)}


def test_names_any_case_and_ranges_of_names() -> None:
    a = CronExpression.parse("0 0 * jan-Mar MON-fri")
    assert a.months == {1, 2, 3}
    assert a.days_of_week == {1, 2, 3, 4, 5}
    assert CronExpression.parse("0 0 * * SUN,sat").days_of_week == {0, 6}
    # Sunday at the end of a range is day 7.
    assert CronExpression.parse("0 0 * * MON-SUN").days_of_week == set(range(7))
    assert CronExpression.parse("0 0 * DEC *").months == {12}
    assert CronExpression.parse("0 0 * 7-JUL *").months == {7}
    assert CronExpression.parse("0 0 * jul-Dec/2 *").months == {7, 9, 11}


def test_zero_and_seven_are_sunday() -> None:
    zero = first("0 0 * * 0", "UTC", "2025-06-01T00:00:00Z", 2)
    seven = first("0 0 * * 7", "UTC", "2025-06-01T00:00:00Z", 2)
    assert zero == seven
    assert [f.date().isoformat() for f in zero] == ["2025-06-08", "2025-06-15"]
    assert CronExpression.parse("0 0 * * 5-7").days_of_week == {5, 6, 0}


def test_steps_lists_and_ranges() -> None:
    assert CronExpression.parse("*/15 * * * *").minutes == {0, 15, 30, 45}
    assert CronExpression.parse("5/20 * * * *").minutes == {5, 25, 45}
    assert CronExpression.parse("10-30/10 * * * *").minutes == {10, 20, 30}
    assert CronExpression.parse("1,2,5-7 * * * *").minutes == {1, 2, 5, 6, 7}
    assert CronExpression.parse("0 0 */10 * *").days_of_month == {1, 11, 21, 31}
    assert CronExpression.parse("0 0 * */3 *").months == {1, 4, 7, 10}
    assert CronExpression.parse("0 0 * * */2").days_of_week == {0, 2, 4, 6}
    assert CronExpression.parse("0 0 * * 1/2").days_of_week == {1, 3, 5}


@pytest.mark.parametrize(
    ("macro", "equivalent"),
    sorted(MACROS.items()),
)
def test_macros(macro: str, equivalent: str) -> None:
    a = CronExpression.parse(macro)
    b = CronExpression.parse(equivalent)
    assert a == b
    assert a.text == macro
    assert CronExpression.parse(macro.upper()) == b


def test_macro_fire_times() -> None:
    after = "2025-06-10T10:20:00Z"
    assert z(first("@yearly", "UTC", after, 1)[0]) == "2026-01-01T00:00:00Z"
    assert z(first("@annually", "UTC", after, 1)[0]) == "2026-01-01T00:00:00Z"
    assert z(first("@monthly", "UTC", after, 1)[0]) == "2025-07-01T00:00:00Z"
    assert z(first("@weekly", "UTC", after, 1)[0]) == "2025-06-15T00:00:00Z"
    assert z(first("@daily", "UTC", after, 1)[0]) == "2025-06-11T00:00:00Z"
    assert z(first("@midnight", "UTC", after, 1)[0]) == "2025-06-11T00:00:00Z"
    assert z(first("@hourly", "UTC", after, 1)[0]) == "2025-06-10T11:00:00Z"


# --------------------------------------------------------------------------------------
# API details
# --------------------------------------------------------------------------------------


def test_next_after_is_strict_and_accepts_any_aware_input() -> None:
    sched = CronSchedule("0 9 * * *", "Asia/Kolkata")
    fire = utc("2025-06-01T03:30:00Z")
    assert sched.next_after(fire - timedelta(microseconds=1)) == fire
    assert z(sched.next_after(fire)) == "2025-06-02T03:30:00Z"
    # The same instant expressed in another zone.
    ist = fire.astimezone(timezone(timedelta(hours=5, minutes=30)))
    assert z(sched.next_after(ist)) == "2025-06-02T03:30:00Z"
    with pytest.raises(CronError, match="timezone-aware"):
        sched.next_after(datetime(2025, 6, 1))


def test_fires_between_excludes_start_includes_end() -> None:
    sched = CronSchedule("0 * * * *", "UTC")
    fires = sched.fires_between(utc("2025-01-01T00:00:00Z"), utc("2025-01-01T03:00:00Z"))
    assert [z(f) for f in fires] == [
        "2025-01-01T01:00:00Z",
        "2025-01-01T02:00:00Z",
        "2025-01-01T03:00:00Z",
    ]
    assert sched.fires_between(utc("2025-01-01T03:00:00Z"), utc("2025-01-01T03:00:00Z")) == []


def test_local_gives_the_zone_reading() -> None:
    sched = CronSchedule("30 2 * * *", "America/New_York")
    local = sched.local(utc("2025-03-09T07:30:00Z"))
    assert local.isoformat() == "2025-03-09T03:30:00-04:00"
    assert local.tzinfo == zoneinfo.ZoneInfo("America/New_York")


def test_period_hint() -> None:
    def hint(cron: str) -> timedelta:
        return CronSchedule(cron, "America/New_York").period_hint()

    assert hint("*/15 * * * *") == timedelta(minutes=15)
    assert hint("*/20 * * * * *") == timedelta(seconds=20)
    assert hint("@hourly") == timedelta(hours=1)
    assert hint("0 9,17 * * *") == timedelta(hours=8)
    assert hint("30 2 * * 1-5") == timedelta(days=1)
    assert hint("@weekly") == timedelta(days=7)
    assert hint("@monthly") == timedelta(days=28)
    assert hint("@yearly") == timedelta(days=365)
    assert hint("0 0 29 2 *") == timedelta(days=4 * 365 + 1)


def test_matches_reads_a_wall_clock() -> None:
    expr = CronExpression.parse("30 9 * * 1#2")
    assert expr.matches(datetime(2025, 6, 9, 9, 30))  # second Monday of June 2025
    assert not expr.matches(datetime(2025, 6, 2, 9, 30))  # first Monday
    assert not expr.matches(datetime(2025, 6, 9, 9, 30, 1))
    assert not expr.matches(datetime(2025, 6, 9, 9, 31))


def test_expression_attributes_and_equality() -> None:
    expr = CronExpression.parse("  0 9 * * MON-FRI  ")
    assert expr.text == "0 9 * * MON-FRI"
    assert str(expr) == "0 9 * * MON-FRI"
    assert expr.hours == {9} and expr.minutes == {0} and expr.seconds == {0}
    assert expr.days_of_month == set(range(1, 32))
    assert expr.months == set(range(1, 13))
    assert expr.days_of_week == {1, 2, 3, 4, 5}
    assert expr == CronExpression.parse("0 9 * * 1-5")
    assert hash(expr) == hash(CronExpression.parse("0 9 * * 1-5"))
    with pytest.raises(AttributeError):
        expr.hours = frozenset({1})  # type: ignore[misc]
    assert CronSchedule(expr, "UTC") == CronSchedule("0 9 * * 1-5", "UTC")
    assert CronSchedule(expr, "UTC") != CronSchedule(expr, "Europe/Paris")
    assert repr(CronSchedule(expr, "UTC")) == "CronSchedule('0 9 * * MON-FRI', 'UTC')"


def test_cron_error_is_a_shiftwork_error_and_a_value_error() -> None:
    with pytest.raises(CronError) as info:
        CronExpression.parse("61 * * * *")
    assert isinstance(info.value, ShiftworkError)
    assert isinstance(info.value, ValueError)
    assert str(info.value) == 'cron "61 * * * *": minute field: 61 is out of range 0-59'


def test_sparse_crons_are_fast() -> None:
    started = time.perf_counter()
    assert z(first("0 0 29 2 *", "America/New_York", "2025-01-01T00:00:00Z", 1)[0]) == (
        "2028-02-29T05:00:00Z"
    )
    # Fifth Monday of February: only in leap years whose Feb 1 is a Monday.
    fires = first("0 0 * 2 1#5", "Europe/London", "2025-01-01T00:00:00Z", 3)
    assert [f.date().isoformat() for f in fires] == ["2044-02-29", "2072-02-29", "2112-02-29"]
    # Last Sunday of February.
    fires = first("0 0 * 2 0L", "UTC", "2025-01-01T00:00:00Z", 1)
    assert fires[0].date().isoformat() == "2025-02-23"
    fires = first("0 0 31 * *", "Pacific/Chatham", "2025-01-01T00:00:00Z", 12)
    assert len(fires) == 12
    assert time.perf_counter() - started < 2.0


def test_never_fires_is_rejected_at_parse_time() -> None:
    for cron in ("0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 0 31 FEB *", "0 0 30,31 2 ?"):
        with pytest.raises(CronError, match="never fires"):
            CronExpression.parse(cron)
    # These are rare but real.
    for cron in ("0 0 29 2 *", "0 0 * 2 1#5", "0 0 L 2 *", "0 0 30 2 1"):
        CronExpression.parse(cron)


def test_no_fire_before_the_end_of_the_calendar_is_an_error() -> None:
    sched = CronSchedule("0 0 29 2 *", "UTC")
    assert z(sched.next_after(utc("9990-01-01T00:00:00Z"))) == "9992-02-29T00:00:00Z"
    with pytest.raises(CronError, match="no fire time"):
        sched.next_after(utc("9996-03-01T00:00:00Z"))


def test_every_zone_except_abbreviations_is_accepted() -> None:
    rejected = {"EST", "MST", "HST", "CET", "EET", "MET", "WET", "localtime", "posixrules"}
    after = utc("2025-06-15T12:00:00Z")
    for name in sorted(zoneinfo.available_timezones()):
        if name in rejected:
            with pytest.raises(CronError, match=f'"{name}"'):
                CronSchedule("0 0 * * *", name)
            continue
        sched = CronSchedule("30 2 * * *", name)
        fire = sched.next_after(after)
        local = sched.local(fire)
        assert fire > after
        assert (local.hour, local.minute) in {(2, 30), (3, 30), (3, 0), (2, 0), (4, 0)}


# --------------------------------------------------------------------------------------
# parse errors
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("0 0 0 * * * 2025", ["got 7", "year"]),
        ("@reboot", ["@reboot", "not supported"]),
        ("@every 5m", ["@every", "not supported"]),
        ("@fortnightly", ["unknown macro", "@fortnightly"]),
        ("@daily 0", ["macro stands alone"]),
        ("61 * * * *", ["minute field", "61 is out of range 0-59"]),
        ("0 24 * * *", ["hour field", "24 is out of range 0-23"]),
        ("* * 32 * *", ["day-of-month field", "32 is out of range 1-31"]),
        ("* * 0 * *", ["day-of-month field", "0 is out of range 1-31"]),
        ("* * * 13 *", ["month field", "13 is out of range 1-12"]),
        ("* * * * 8", ["day-of-week field", "8 is out of range 0-7"]),
        ("60 * * * * *", ["second field", "60 is out of range 0-59"]),
        ("0 0 * * FRI-MON", ["day-of-week field", "FRI-MON", "backwards"]),
        ("0 0 * NOV-FEB *", ["month field", "NOV-FEB", "backwards"]),
        ("30-10 * * * *", ["minute field", "30-10", "backwards"]),
        ("*/0 * * * *", ["minute field", "step 0"]),
        ("0 */25 * * *", ["hour field", "step 25"]),
        ("*/x * * * *", ["minute field", 'step "x"']),
        ("? * * * *", ["minute field", '"?"']),
        ("0 ? * * *", ["hour field", '"?"']),
        ("0 0 * ? *", ["month field", '"?"']),
        ("0 0 ?,1 * *", ["day-of-month field", '"?" must stand alone']),
        ("", ["empty expression"]),
        ("   ", ["empty expression"]),
        ("abc", ["expected 5 fields", "got 1"]),
        ("* * * *", ["expected 5 fields", "got 4"]),
        ("abc * * * *", ["minute field", '"abc" is not a number']),
        ("0 0 * FOO *", ["month field", '"FOO" is not a month name']),
        ("0 0 * * MONDAY", ["day-of-week field", '"MONDAY"']),
        ("0 0 * JAN-MON *", ["month field", '"MON"']),
        ("1,,2 * * * *", ["minute field", "empty item"]),
        ("1- * * * *", ["minute field", "missing value"]),
        ("0 0 LW * *", ["day-of-month field", "LW"]),
        ("0 0 15W * *", ["day-of-month field", "15W"]),
        ("0 0 * * L", ["day-of-week field", "needs a weekday"]),
        ("0 0 * * 1#0", ["day-of-week field", "1#0", "1-5"]),
        ("0 0 * * 1#6", ["day-of-week field", "1#6", "1-5"]),
        ("0 0 * * 9#1", ["day-of-week field", "9 is out of range 0-7"]),
        ("0 0 * * 8L", ["day-of-week field", "8 is out of range 0-7"]),
        ("5L * * * *", ["minute field", "only allowed in the day fields"]),
        ("0 0 1#2 * *", ["day-of-month field", "1#2"]),
        ("0 0 * * 5L/2", ["day-of-week field", '"5L" is not a number or day-of-week name']),
        ("0 0 * 5L *", ["month field", "only allowed in the day fields"]),
        ("0 0 30 2 *", ["never fires", "FEB"]),
    ],
)
def test_parse_errors_name_the_field(text: str, fragments: list[str]) -> None:
    with pytest.raises(CronError) as info:
        CronExpression.parse(text)
    message = str(info.value)
    assert message.startswith(f'cron "{text.strip()}"') or message.startswith('cron ""')
    for fragment in fragments:
        assert fragment in message, message
    # CronSchedule reports the same error.
    with pytest.raises(CronError):
        CronSchedule(text, "UTC")


@pytest.mark.parametrize(
    ("tz", "fragment"),
    [
        ("EST", "abbreviations are not accepted"),
        ("MST", "abbreviations are not accepted"),
        ("HST", "abbreviations are not accepted"),
        ("CET", "abbreviations are not accepted"),
        ("PST", "not an IANA zone name"),
        ("UTC+3", "Etc/GMT-3"),
        ("", "not an IANA zone name"),
        ("Not/AZone", "not an IANA zone name"),
        ("america/new_york", 'did you mean "America/New_York"'),
        ("localtime", "depends on the host"),
        ("../etc/passwd", "not an IANA zone name"),
    ],
)
def test_bad_zones_are_rejected(tz: str, fragment: str) -> None:
    with pytest.raises(CronError) as info:
        CronSchedule("0 0 * * *", tz)
    message = str(info.value)
    assert f'"{tz}"' in message
    assert fragment in message


@pytest.mark.parametrize(
    "tz", ["UTC", "Etc/UTC", "GMT", "Etc/GMT-3", "EST5EDT", "PST8PDT", "America/Argentina/Salta"]
)
def test_good_zones_are_accepted(tz: str) -> None:
    assert CronSchedule("0 0 * * *", tz).tz == tz
