"""`check_health` and `shiftwork health`: stalled queue, late schedule, no worker."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from shiftwork import App, ConfigurationError, FakeClock
from shiftwork.observe import Problem, ScheduleStatus, check_health

from .conftest import ROOT


def _alive(app: App, queues: dict[str, int] | None = None) -> None:
    """A worker row with a fresh heartbeat (on the app's clock)."""
    app.store.fleet.workers_upsert("w1", "host", 1, queues or {"emails": 1})


def _kinds(app: App, **kwargs: Any) -> list[str]:
    return [p.kind for p in check_health(app, **kwargs).problems]


@pytest.fixture
def clocked(make_app: Any) -> tuple[App, FakeClock]:
    clock = FakeClock()
    app = make_app(clock=clock)
    app.queue("emails", max_wait=60)

    @app.task(queue="emails")
    def send(to: str) -> None: ...

    return app, clock


def test_passes_when_queues_flow_and_a_worker_is_alive(clocked: tuple[App, FakeClock]) -> None:
    app, clock = clocked
    app.tasks[next(iter(app.tasks))].enqueue("a@example.com")
    clock.advance(59)
    _alive(app)  # its heartbeat is fresh
    report = check_health(app)
    assert report.ok, report.problems
    assert report.workers_alive == 1


def test_fails_for_a_stalled_queue(clocked: tuple[App, FakeClock]) -> None:
    app, clock = clocked
    app.tasks[next(iter(app.tasks))].enqueue("a@example.com")
    clock.advance(61)
    _alive(app)
    report = check_health(app)
    assert [p.kind for p in report.problems] == ["queue_stalled"]
    assert "queue emails" in report.problems[0].message
    assert "61s" in report.problems[0].message and "60s" in report.problems[0].message


def test_a_default_threshold_covers_queues_without_their_own(make_app: Any) -> None:
    clock = FakeClock()
    app = make_app(clock=clock)

    @app.task(queue="misc")
    def job() -> None: ...

    job.enqueue()
    clock.advance(500)
    _alive(app, {"misc": 1})
    assert _kinds(app) == []
    assert _kinds(app, default_max_wait=300) == ["queue_stalled"]


def test_fails_when_no_worker_is_alive(clocked: tuple[App, FakeClock]) -> None:
    app, clock = clocked
    report = check_health(app)
    assert [p.kind for p in report.problems] == ["no_worker"]
    assert "none seen in the last day" in report.problems[0].message
    _alive(app)
    assert _kinds(app) == []
    clock.advance(app.settings.lease_seconds * 4)  # heartbeats stopped
    assert _kinds(app) == ["no_worker"]
    assert _kinds(app, require_worker=False) == []


def test_fails_for_a_late_schedule(clocked: tuple[App, FakeClock]) -> None:
    app, _ = clocked
    _alive(app)

    class Schedules:
        late = False

        def schedules_status(self) -> list[ScheduleStatus]:
            return [ScheduleStatus("nightly-report", late=self.late,
                                   reason="02:00 fire not run after 10 minutes")]

    source = Schedules()
    app.observers.schedules = source
    assert _kinds(app) == []
    source.late = True
    report = check_health(app)
    assert [p.kind for p in report.problems] == ["schedule_late"]
    assert "nightly-report" in report.problems[0].message


def test_plugged_in_checks_add_problems(app: App) -> None:
    _alive(app)
    app.observers.health_checks.append(lambda a: [Problem("disk", "spool", "spool is full")])
    assert _kinds(app) == ["disk"]


def test_bad_max_wait_is_refused(app: App) -> None:
    with pytest.raises(ConfigurationError, match="max_wait"):
        app.queue("emails", max_wait=0)
    with pytest.raises(ConfigurationError, match="queue name"):
        app.queue("bad name", max_wait=5)


def _health(db: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SHIFTWORK_TEST_DSN": db["dsn"], "SHIFTWORK_TEST_SCHEMA": db["schema"],
           "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}
    return subprocess.run([sys.executable, "-m", "shiftwork.cli", "health",
                           "tests.apps.observed:app", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def test_the_command_exits_non_zero_and_says_why(db: dict[str, str]) -> None:
    app = App(db["dsn"], schema=db["schema"])
    try:
        app.migrate()
        done = _health(db)
        assert done.returncode == 1, done.stderr
        assert "UNHEALTHY no_worker" in done.stdout
        _alive(app)
        done = _health(db)
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.startswith("ok:")
        # A job that has waited two minutes in a queue that tolerates one.
        conn_now = app.store.db_now()
        from datetime import timedelta

        from shiftwork.model.new_job import NewJob

        app.store.jobs.insert([NewJob("send", "emails", '{"args": ["x"]}',
                                      run_at=conn_now - timedelta(seconds=120))])
        done = _health(db, "--json")
        assert done.returncode == 1
        assert '"queue_stalled"' in done.stdout
    finally:
        app.close()
