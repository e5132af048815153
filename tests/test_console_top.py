"""`shiftwork top`'s "last 60 s" column (issue 29): the jobs finished in the last 60
seconds, never the newest recorded minute however old it is."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from shiftwork.model.records import QueueMinute
from shiftwork.observe.views import finished_in_last_60s, overview


def test_last_60s_is_zero_long_after_the_last_job(make_app: Any) -> None:
    """The issue's report: "last minute 524" nine minutes after the last job."""
    app = make_app()
    now = app.store.db_now()
    minute = now.replace(second=0, microsecond=0)
    app.store.observe.queue_minutes_add([QueueMinute("default", minute - timedelta(minutes=9),
                                             succeeded=524)])
    row = next(r for r in overview(app).queues if r.stats.queue == "default")
    assert row.last_hour and row.last_60s == 0


def test_last_60s_counts_this_minute_and_the_share_of_the_one_before() -> None:
    from datetime import UTC, datetime

    now = datetime(2026, 12, 1, 12, 0, 15, tzinfo=UTC)  # a quarter into the minute
    history = [QueueMinute("q", datetime(2026, 12, 1, 11, 58, tzinfo=UTC), succeeded=1000),
               QueueMinute("q", datetime(2026, 12, 1, 11, 59, tzinfo=UTC), succeeded=40),
               QueueMinute("q", datetime(2026, 12, 1, 12, 0, tzinfo=UTC), succeeded=7,
                           dead=3)]
    # all 10 of this minute, three quarters of the 40 of the minute before, none older
    assert finished_in_last_60s(history, now) == 10 + 30
