"""Schedules added at run time (app.schedules.add / remove), on both engines: stored with
origin 'runtime', kept by the start-up reconcile, refused with clear errors when wrong."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from shiftwork import App
from shiftwork.core.errors import ConfigurationError, PayloadError, UnknownTaskError
from shiftwork.model.schedule_values import Catchup, Overlap
from shiftwork.schedules.cron import CronError
from shiftwork.schedules.errors import UnknownScheduleError
from shiftwork.schedules.origin import ScheduleNameTaken
from shiftwork.schedules.scheduler import reconcile
from shiftwork.schedules.stored import schedules_of

from .conftest import running_worker, wait_for


def _app(make_app: Callable[..., App]) -> App:
    app = make_app()

    @app.task(name="report")
    def report(customer: str) -> str:
        return customer

    @app.periodic("0 2 * * *", name="nightly")
    def nightly() -> None:
        pass

    return app


def test_add_stores_a_runtime_schedule_with_its_policies(make_app: Callable[..., App]) -> None:
    app = _app(make_app)
    report = app.get_task("report")
    defn = app.schedules.add("report-acme", "0 6 * * MON", report.call("acme"),
                             tz="Europe/Paris", catchup="all", overlap="allow_all",
                             jitter=5)
    assert defn.task == "report" and defn.tz == "Europe/Paris"
    info = schedules_of(app.store).get("report-acme")
    assert info.origin == "runtime" and info.removed_at is None
    assert info.defn.catchup is Catchup.ALL and info.defn.overlap is Overlap.ALLOW_ALL
    assert info.defn.args_json == defn.args_json
    local = info.defn.cron_schedule().local(info.next_fire_at)
    assert (local.weekday(), local.hour, local.minute) == (0, 6, 0)
    assert "report-acme" not in app.schedules  # the dict holds code's schedules only


def test_worker_start_reconcile_keeps_runtime_and_removes_stale_code(
        make_app: Callable[..., App]) -> None:
    app = _app(make_app)
    app.schedules.add("report-acme", "0 6 * * MON", app.get_task("report").call("acme"))
    reconcile(app.runtime)
    # A second deployment whose code no longer declares "nightly".
    other = make_app()
    other.task(name="report")(lambda customer: customer)
    report = reconcile(other.runtime)
    assert report == {"nightly": "removed"}
    live = {i.name: i.origin for i in schedules_of(other.store).overview()}
    assert live == {"report-acme": "runtime"}


def test_code_declaring_a_runtime_name_takes_it_over(make_app: Callable[..., App]) -> None:
    app = _app(make_app)
    app.schedules.add("weekly", "0 6 * * MON", "report", ["acme"])
    later = make_app()
    later.task(name="report")(lambda customer: customer)
    later.schedule("weekly", "0 7 * * MON", "report", ["acme"])
    assert reconcile(later.runtime)["weekly"] == "changed"
    info = schedules_of(later.store).get("weekly")
    assert info.origin == "code" and info.defn.cron == "0 7 * * MON"
    with pytest.raises(ConfigurationError, match="declared in code"):
        later.schedules.remove("weekly")


def test_remove_then_add_again_revives(make_app: Callable[..., App]) -> None:
    app = _app(make_app)
    call = app.get_task("report").call("acme")
    app.schedules.add("r", "*/5 * * * *", call)
    app.schedules.remove("r")
    assert "r" not in {i.name for i in schedules_of(app.store).overview()}
    assert schedules_of(app.store).get("r").removed_at is not None
    app.schedules.add("r", "*/10 * * * *", call)
    info = schedules_of(app.store).get("r")
    assert info.removed_at is None and info.defn.cron == "*/10 * * * *"
    with pytest.raises(ScheduleNameTaken, match="already exists"):
        app.schedules.add("r", "*/10 * * * *", call)
    app.schedules.add("r", "*/15 * * * *", call, replace=True)
    assert schedules_of(app.store).get("r").defn.cron == "*/15 * * * *"


def test_bad_input_is_refused_with_the_reason(make_app: Callable[..., App]) -> None:
    app = _app(make_app)
    report = app.get_task("report")
    with pytest.raises(CronError, match="schedule r"):
        app.schedules.add("r", "0 6 * * MOON", report.call("acme"))
    with pytest.raises(CronError, match="Mars/Olympus"):
        app.schedules.add("r", "0 6 * * MON", report.call("acme"), tz="Mars/Olympus")
    with pytest.raises(UnknownTaskError, match=r"unknown task 'reprot'.*report"):
        app.schedules.add("r", "0 6 * * MON", "reprot", ["acme"])
    foreign = make_app()
    stranger = foreign.task(name="stranger")(lambda: None)
    with pytest.raises(UnknownTaskError, match="not registered on this app"):
        app.schedules.add("r", "0 6 * * MON", stranger.call())
    with pytest.raises(ScheduleNameTaken, match="declared in code"):
        app.schedules.add("nightly", "0 6 * * MON", report.call("acme"))
    with pytest.raises(ConfigurationError, match=r"unknown option.*catchupp"):
        app.schedules.add("r", "0 6 * * MON", report.call("acme"), catchupp="all")
    with pytest.raises(ConfigurationError, match="catchup"):
        app.schedules.add("r", "0 6 * * MON", report.call("acme"), catchup="sometimes")
    with pytest.raises(PayloadError, match="arguments do not match"):
        app.schedules.add("r", "0 6 * * MON", "report", [1, 2, 3])
    with pytest.raises(UnknownScheduleError, match="no run-time schedule named 'r'"):
        app.schedules.remove("r")
    reconcile(app.runtime)  # stores "nightly" (code)
    with pytest.raises(ScheduleNameTaken, match="declared in code"):
        schedules_of(app.store).add(schedules_of(app.store).get("nightly").defn,
                                lambda d, now: now)
    with pytest.raises(ConfigurationError, match="declared in code"):
        app.schedules.remove("nightly")
    assert "r" not in {i.name for i in schedules_of(app.store).overview(include_removed=True)}


def test_a_runtime_schedule_fires_in_a_worker_and_stops_when_removed(
        make_app: Callable[..., App]) -> None:
    app = make_app()
    seen: list[str] = []

    @app.task(name="ping")
    def ping(who: str) -> None:
        seen.append(who)

    with running_worker(app):
        app.schedules.add("ping-every-second", "* * * * * *", ping.call("rt"),
                          overlap="allow_all")
        wait_for(lambda: len(seen) >= 2, timeout=20, what="two fires of the run-time schedule")
        app.schedules.remove("ping-every-second")
        runs = len(schedules_of(app.store).runs_list("ping-every-second", 1000))
        wait_for(lambda: not app.list_jobs(state="available"), timeout=10, what="drained")
        time.sleep(2.5)
        assert len(schedules_of(app.store).runs_list("ping-every-second", 1000)) <= runs + 1
    assert set(seen) == {"rt"}
