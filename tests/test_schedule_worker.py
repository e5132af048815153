"""Schedules run by real (in-process) workers on real time: a schedule firing every second."""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from shiftwork import App, JobContext, JobState
from shiftwork.model.schedule_values import RunStatus
from shiftwork.schedules.stored import schedules_of

from .conftest import running_worker, wait_for


def test_cancel_other_stops_a_long_run_before_the_next_starts(
        make_app: Callable[..., App]) -> None:
    app = make_app()
    spans: dict[int, list[float]] = {}
    lock = threading.Lock()

    @app.periodic("* * * * * *", name="long", overlap="cancel_other", max_attempts=1)
    def long(ctx: JobContext) -> None:
        with lock:
            spans[ctx.job_id] = [time.monotonic()]
        try:
            while True:  # runs far longer than its one-second interval, until told to stop
                ctx.raise_if_cancelled()
                time.sleep(0.02)
        finally:
            with lock:
                spans[ctx.job_id].append(time.monotonic())

    with running_worker(app, {"default": 4}):
        wait_for(lambda: len(app.list_jobs(state="cancelled")) >= 2, timeout=30,
                 what="two runs cancelled by their successors")
    done = sorted(s for s in spans.values() if len(s) == 2)
    for (_, end), (start, _) in itertools.pairwise(done):
        assert start >= end, "the next run started before the cancelled one stopped"
    runs = schedules_of(app.store).runs_list("long", 1000)
    assert all(r.status is not RunStatus.SKIPPED for r in runs)
    assert len(done) >= 2


# The once-only mark is the same SQL on both engines and is checked on PostgreSQL by
# test_schedule_policies; this one runs on SQLite to keep the suite near a minute.
@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)
def test_dead_man_alerts_once_per_late_occurrence_across_workers(
        make_app: Callable[..., App], engine: str) -> None:
    alerts: list[Any] = []
    apps = []
    for _ in range(2):  # two workers (two apps, as two processes would have)
        app = make_app()

        @app.periodic("* * * * * *", name="fails", overlap="allow_all", max_attempts=1,
                      expect_success_within=1)
        def fails() -> None:
            raise RuntimeError("the nightly export is broken")

        app.on_schedule_late(alerts.append)
        apps.append(app)
    with running_worker(apps[0]), running_worker(apps[1]):
        wait_for(lambda: len(alerts) >= 3, timeout=30, what="late alerts")
    keys = Counter((a.schedule, a.fire_at) for a in alerts)
    assert set(keys.values()) == {1}, "an occurrence was alerted twice"
    assert all(a.status is RunStatus.FAILED for a in alerts if a.job_id
               and apps[0].get_job(a.job_id).state is JobState.DEAD)
    info = schedules_of(apps[0].store).get("fails")
    assert info.late()
    assert any("fails is late" in p for p in apps[0].schedules.health())
