"""Quiet failures (issue 36): a job that succeeds but did nothing is an alert too.

Items processed are recorded with the attempt (``ctx.processed``); a schedule's
``expect_items`` marks a run that succeeded with fewer empty once, fleet-wide (in the
database first, then ``on_schedule_empty``), until a run meets it again; a task's
``expect_items`` is checked over a window. Real workers (processes and in-process) and
the leader, on both engines.
"""

from __future__ import annotations

import functools
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from shiftwork import App, ConfigurationError, JobContext, JobState
from shiftwork.model.items import ItemsCheck
from shiftwork.model.records import EmptyRun, RunFigures
from shiftwork.observe.health import check_health
from shiftwork.observe.metrics import Metrics
from shiftwork.schedules.definition import ScheduleDef, iso_z
from shiftwork.schedules.stored import schedules_of
from shiftwork.web import create_dashboard

from .conftest import ROOT, imported_app, running_worker, spawn_worker, wait_for
from .test_metrics import samples, value
from .test_security import TOKEN, Served, login

REPORT = "nightly-report"


def cli(db: dict[str, str], app_path: str, *args: str, extra_env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'src'}",
           "SHIFTWORK_TEST_DSN": db["dsn"], "SHIFTWORK_TEST_SCHEMA": db["schema"],
           "SHIFTWORK_APP": app_path, "COLUMNS": "250", **(extra_env or {})}
    return subprocess.run([sys.executable, "-m", "shiftwork.cli", *args], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=60)


# -- items processed, recorded ---------------------------------------------------------


def test_processed_adds_up_and_is_stored_shown_and_counted(
        make_app: Callable[..., App], db: dict[str, str], monkeypatch: pytest.MonkeyPatch
        ) -> None:
    """ctx.processed(n) adds up; the total is stored with the attempt, shown by `jobs
    show` (a real subprocess) and the served dashboard's job page, and counted in
    shiftwork_items_processed_total per task. A job that never says stays unknown."""
    with imported_app(monkeypatch, "cli_app", db["dsn"], db["schema"]) as module:
        app = module.app

        @app.task(name="import-rows", queue="work")
        def import_rows(ctx: JobContext, batches: list[int]) -> None:
            for n in batches:
                ctx.processed(n)

        @app.task(name="silent", queue="work")
        def silent() -> None:
            pass

        metrics = Metrics(app)
        counted = import_rows.enqueue([2, 3, 0])
        unsaid = silent.enqueue()
        with running_worker(app, {"work": 2}):
            wait_for(lambda: all(app.get_job(j.id).state is JobState.SUCCEEDED
                                 for j in (counted, unsaid)), what="both jobs succeeded")
        assert app.get_job(counted.id).items == 5
        assert app.get_job(unsaid.id).items is None
        found = samples(metrics.exposition().decode())
        assert value(found, "shiftwork_items_processed_total", task="import-rows",
                     queue="work") == 5.0
        metrics.close()

        shown = cli(db, "tests.apps.cli_app:app", "jobs", "show", str(counted.id))
        assert shown.returncode == 0, shown.stderr
        assert "items processed: 5" in shown.stdout
        assert "items processed" not in cli(db, "tests.apps.cli_app:app", "jobs", "show",
                                            str(unsaid.id)).stdout
        with Served(create_dashboard(app, token=TOKEN)) as served, served.client() as c:
            login(c)
            page = c.get(f"/jobs/{counted.id}")
            assert page.status_code == 200
            assert re.search(r'<dd id="items">5</dd>', page.text)
            assert '<dd id="items">-</dd>' in c.get(f"/jobs/{unsaid.id}").text


@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)
def test_a_child_process_reports_its_items(rec_app: Any, engine: str) -> None:
    """The process executor: ctx.processed in the child reaches the parent's outcome."""
    app = rec_app.app
    app.import_path = "tests.apps.recording:app"
    job = rec_app.in_child.enqueue(7)
    with running_worker(app, {"hard": 1}, process_queues={"hard"}):
        wait_for(lambda: app.get_job(job.id).state is JobState.SUCCEEDED, timeout=30)
    assert app.get_job(job.id).items == 7


def test_a_bad_count_fails_the_attempt_with_a_clear_error(app: App) -> None:
    @app.task(name="miscounts", max_attempts=1)
    def miscounts(ctx: JobContext, n: Any) -> None:
        ctx.processed(n)

    jobs = [miscounts.enqueue(n) for n in (-1, 1.5, True, "3")]
    with running_worker(app):
        wait_for(lambda: all(app.get_job(j.id).state is JobState.DEAD for j in jobs),
                 what="each bad count failed its job")
    for j in jobs:
        message = app.get_job(j.id).errors[-1]["message"]
        assert "ctx.processed: n must be a whole number from 0" in message


# -- a schedule's expectation ------------------------------------------------------------


def test_an_empty_run_is_reported_once_across_two_real_workers_until_one_has_items(
        db: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The issue's test: a schedule whose job succeeds with 0 items under expect_items=1,
    two real worker processes. Each empty occurrence is marked in the database and alerted
    once (by whichever process leads, also across a leader's stop), `shiftwork health` and
    `schedules` say EMPTY, the metric is 1; a later run with items clears all of it."""
    monkeypatch.setenv("QUIET_DIR", str(tmp_path))
    (tmp_path / "rows").write_text("0")
    alerts = tmp_path / "alerts"
    env = {"QUIET_DIR": str(tmp_path)}
    with imported_app(monkeypatch, "quiet", db["dsn"], db["schema"]) as module:
        app = module.app
        workers = [spawn_worker(db, "quiet", ["reports"], env=env,
                                log_path=tmp_path / f"worker{i}.log") for i in range(2)]
        try:
            started = time.monotonic()
            wait_for(lambda: alerts.exists() and len(alerts.read_text().splitlines()) >= 3,
                     timeout=60, what="three empty runs alerted")
            first_alert_after = time.monotonic() - started
            assert schedules_of(app.store).get(REPORT).empty()
            health = cli(db, "tests.apps.quiet:app", "health", extra_env=env)
            assert health.returncode == 1, health.stdout + health.stderr
            assert (f"UNHEALTHY schedule_empty: schedule {REPORT} is empty: its run of "
                    in health.stdout)
            assert "succeeded but processed 0 item(s); expected at least 1" in health.stdout
            listed = cli(db, "tests.apps.quiet:app", "schedules", extra_env=env)
            assert re.search(rf"{REPORT}.*EMPTY", listed.stdout), listed.stdout
            runs = cli(db, "tests.apps.quiet:app", "schedules", "runs", REPORT, extra_env=env)
            assert "EMPTY" in runs.stdout
            metrics = Metrics(app)
            found = samples(metrics.exposition().decode())
            assert value(found, "shiftwork_schedule_empty", schedule=REPORT) == 1.0

            # The leader stops (a deploy): the other worker leads on, and goes on
            # alerting each empty run once.
            leader_pid = int(alerts.read_text().splitlines()[0].split()[2])
            leader = next(w for w in workers if w.pid == leader_pid)
            leader.send_signal(signal.SIGTERM)
            leader.wait(60)
            wait_for(lambda: any(int(line.split()[2]) != leader_pid
                                 for line in alerts.read_text().splitlines()),
                     timeout=60, what="the next leader alerting")

            (tmp_path / "rows").write_text("3")
            wait_for(lambda: not schedules_of(app.store).get(REPORT).empty(), timeout=60,
                     what="a run with items clears the empty mark")
            found = samples(metrics.exposition().decode())
            assert value(found, "shiftwork_schedule_empty", schedule=REPORT) == 0.0
            metrics.close()
            healthy = cli(db, "tests.apps.quiet:app", "health", extra_env=env)
            assert "schedule_empty" not in healthy.stdout, healthy.stdout
            assert healthy.returncode == 0, healthy.stdout
        finally:
            for w in workers:
                if w.poll() is None:
                    w.send_signal(signal.SIGTERM)
            for w in workers:
                w.wait(60)
        lines = alerts.read_text().splitlines()
        fired = Counter(tuple(line.split()[:2]) for line in lines)
        assert set(fired.values()) == {1}, f"an empty run was alerted twice: {fired}"
        assert len({line.split()[2] for line in lines}) == 2, "both workers led in turn"
        marked = {r.fire_at for r in schedules_of(app.store).runs_list(REPORT, 1000)
                  if r.items_check is ItemsCheck.EMPTY}
        alerted = {at for _, at in fired}
        assert alerted == {iso_z(t) for t in marked}, "marked and alerted runs differ"
        full = [r for r in schedules_of(app.store).runs_list(REPORT, 1000)
                if r.items_check is ItemsCheck.OK]
        assert full and all(r.items == 3 for r in full)
        print(f"\n{len(lines)} empty runs alerted once each by pids "
              f"{sorted({line.split()[2] for line in lines})}; first alert "
              f"{first_alert_after:.1f}s after the workers were started")


def test_a_rule_judges_each_run_and_a_rule_that_raises_marks_it_empty(
        make_app: Callable[..., App]) -> None:
    """expect_items=callable: given the run's figures; false is empty, and an error is
    empty with the error (never silently green)."""
    app = make_app()
    seen: list[RunFigures] = []
    alerts: list[EmptyRun] = []

    def at_least_ten(run: RunFigures) -> bool:
        seen.append(run)
        return (run.items or 0) >= 10

    def broken(run: RunFigures) -> bool:
        raise ValueError("the threshold table is missing")

    @app.task(name="count-rows")
    def count_rows(ctx: JobContext, n: int) -> None:
        ctx.processed(n)

    app.schedule("small", "* * * * * *", count_rows, [4], overlap="allow_all",
                 expect_items=at_least_ten)
    app.schedule("broken-rule", "* * * * * *", count_rows, [99], overlap="allow_all",
                 expect_items=broken)
    app.on_schedule_empty(alerts.append)
    events: list[dict[str, Any]] = []
    app.events.subscribe(lambda name, fields: events.append(fields)
                         if name == "schedule.empty" else None)
    with running_worker(app):
        wait_for(lambda: {a.schedule for a in alerts} == {"small", "broken-rule"},
                 timeout=30, what="both schedules alerted")
    assert sorted((e["schedule"], e["fire_at"]) for e in events) == \
        sorted((a.schedule, iso_z(a.fire_at)) for a in alerts), "one event per alert"
    small = next(a for a in alerts if a.schedule == "small")
    assert small.items == 4 and small.expect_items is None
    assert "the rule tests.test_quiet_failures" in small.reason and "refused it" in small.reason
    bad = next(a for a in alerts if a.schedule == "broken-rule")
    assert "raised ValueError: the threshold table is missing" in bad.reason
    assert seen and seen[0].items == 4 and seen[0].job_id is not None
    assert seen[0].duration is not None and seen[0].duration >= 0
    stored = schedules_of(app.store).get("small").defn
    assert stored.expect_items is None
    assert stored.expect_items_rule is not None
    assert stored.expect_items_rule.endswith("<locals>.at_least_ten")
    health = [p.kind for p in check_health(app, require_worker=False).problems]
    assert health.count("schedule_empty") == 2
    with Served(create_dashboard(app, token=TOKEN)) as served, served.client() as c:
        login(c)
        overview = c.get("/").text
    row = re.search(r'<tr data-schedule="broken-rule".*?</tr>', overview, re.S)
    assert row and '<span class="tag bad">empty</span>' in row.group(0)
    assert "raised ValueError: the threshold table is missing" in row.group(0)


def test_a_schedule_without_an_expectation_is_never_judged(make_app: Callable[..., App]
                                                          ) -> None:
    app = make_app()
    alerts: list[EmptyRun] = []

    @app.periodic("* * * * * *", name="plain", overlap="allow_all")
    def plain() -> None:
        pass

    app.on_schedule_empty(alerts.append)
    with running_worker(app):
        wait_for(lambda: any(r.items_check is ItemsCheck.NONE
                             for r in schedules_of(app.store).runs_list("plain")),
                 timeout=30, what="a run synced")
    assert alerts == []
    assert not schedules_of(app.store).get("plain").empty()


def test_bad_expectations_are_refused_at_declaration(app: App) -> None:
    @app.task(name="t")
    def t() -> None:
        pass

    for bad in (-1, 0, 1.5, True, "3", 10**16):
        with pytest.raises(ConfigurationError,
                           match=r"schedule s: expect_items must be a whole number from 1"):
            app.schedule("s", "* * * * *", t, expect_items=bad)
    with pytest.raises(ConfigurationError, match="a run-time schedule is stored by value"):
        app.schedules.add("rt", "* * * * *", "t", expect_items=lambda run: True)
    with pytest.raises(ConfigurationError, match="task u: expect_items must be a whole number"):
        app.task(name="u", expect_items=-2)(lambda: None)
    with pytest.raises(ConfigurationError, match=r"a rule \(a callable\) is for schedules"):
        app.task(name="u", expect_items=lambda run: True)(lambda: None)
    with pytest.raises(ConfigurationError, match="expect_items_within must be at least 60"):
        app.task(name="u", expect_items=1, expect_items_within=5)(lambda: None)
    with pytest.raises(ConfigurationError, match="expect_items_within must be a finite"):
        app.task(name="u", expect_items=1, expect_items_within=float("nan"))(lambda: None)
    assert "s" not in app.schedules and "u" not in app.tasks


def test_an_items_expectation_changes_the_definition_hash() -> None:
    """Unset, the new fields leave stored hashes as they were
    (test_schedule_reconcile::test_the_definition_hash_is_the_one_stored_by_earlier_versions);
    set, the reconcile sees the change."""
    plain = ScheduleDef(name="n", cron="* * * * *", tz="UTC", task="t", args_json="[]",
                        queue="default")
    counted = ScheduleDef(name="n", cron="* * * * *", tz="UTC", task="t", args_json="[]",
                          queue="default", expect_items=1)
    ruled = ScheduleDef(name="n", cron="* * * * *", tz="UTC", task="t", args_json="[]",
                        queue="default", expect_items_rule="m.rule")
    assert len({plain.definition_hash(), counted.definition_hash(),
                ruled.definition_hash()}) == 3


# -- a task's expectation ----------------------------------------------------------------


def test_a_task_that_succeeds_with_nothing_over_its_window_is_unhealthy(
        make_app: Callable[..., App], monkeypatch: pytest.MonkeyPatch) -> None:
    """@app.task(expect_items=...): event-driven work whose output silently stops. Jobs
    succeed, none reports an item within the window: health and shiftwork_task_empty say
    so; an item clears it. No job at all is not this check's alarm."""
    # The worker writes its per-task counts (what health reads) every 5 s: every 0.25 s
    # here, so each of the two waits below is not a whole flush interval.
    from shiftwork.observe import worker as observe_worker

    monkeypatch.setattr(observe_worker, "ThroughputRecorder", functools.partial(
        observe_worker.ThroughputRecorder, interval=0.25))
    app = make_app()

    @app.task(name="sync-orders", queue="events", expect_items=1,
              expect_items_within=timedelta(minutes=10))
    def sync_orders(ctx: JobContext, n: int) -> None:
        ctx.processed(n)

    metrics = Metrics(app)
    assert "task_empty" not in [p.kind for p in check_health(app, require_worker=False).problems]
    with running_worker(app, {"events": 2}):
        empty = [sync_orders.enqueue(0) for _ in range(3)]
        wait_for(lambda: any(p.kind == "task_empty" for p in
                             check_health(app, require_worker=False).problems),
                 timeout=30, what="the task reported empty")
        problem = next(p for p in check_health(app).problems if p.kind == "task_empty")
        assert problem.subject == "sync-orders"
        assert "3 job(s) succeeded in the last 600s but reported 0 item(s)" in problem.message
        found = samples(metrics.exposition().decode())
        assert value(found, "shiftwork_task_empty", task="sync-orders") == 1.0
        sync_orders.enqueue(2)
        wait_for(lambda: not any(p.kind == "task_empty" for p in
                                 check_health(app, require_worker=False).problems),
                 timeout=30, what="an item clears it")
    assert all(app.get_job(j.id).items == 0 for j in empty)
    found = samples(metrics.exposition().decode())
    assert value(found, "shiftwork_task_empty", task="sync-orders") == 0.0
    assert value(found, "shiftwork_items_processed_total", task="sync-orders",
                 queue="events") == 2.0
    metrics.close()

