"""A rolling deploy that adds a task kills none of its jobs (issue 28): an old worker
(a real process of the release before) that claims the new task's jobs gives them back
unrun, their attempt not counted, and claims that task no more; `check_health` names the
task while no live worker registers it; a worker of the new release then runs every one,
once."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from shiftwork.observe import check_health

from .conftest import imported_app, spawn_worker, wait_for


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    proc.wait(30)


def test_old_workers_leave_a_new_task_for_new_workers(
        db: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    with imported_app(monkeypatch, "deploy_new", db["dsn"], db["schema"]) as new:
        app = new.app
        old_worker = spawn_worker(db, "deploy_old", ["default=4"])
        new_worker = None
        try:
            invoices = [new.send_invoice.enqueue(i).id for i in range(20)]
            reminders = [new.send_reminder.enqueue(i).id for i in range(5)]
            # The old release runs what it knows ...
            wait_for(lambda: all(app.get_job(j).state.value == "succeeded" for j in reminders),
                     what="the old worker runs the task it knows")
            # ... and passes over what it does not: the invoices of its first claim go back
            # at once, unrun; it claims no more of them.
            wait_for(lambda: any(app.get_job(j).errors for j in invoices), timeout=30,
                     what="invoices passed over by the old worker")
            # Having met the task, the old worker claims its jobs no more: it runs later
            # reminders, and the invoices are where it left them.
            later = [new.send_reminder.enqueue(i).id for i in range(5)]
            wait_for(lambda: all(app.get_job(j).state.value == "succeeded" for j in later),
                     what="the old worker keeps running the task it knows")
            passed = [job for job in map(app.get_job, invoices) if job.attempt]
            assert 1 <= len(passed) <= 4 + 4  # its first claim: the slots and claimed ahead
            for job in map(app.get_job, invoices):
                assert job.state.value == "available", job
                assert job.counted_attempt == 0  # no attempt spent
                assert [e["kind"] for e in job.errors] == ["unknown_task"] * job.attempt
            assert "billing.send_invoice" in passed[0].errors[0]["message"]
            wait_for(lambda: any(p.kind == "task_unserved" for p in check_health(app).problems),
                     timeout=30, what="health names the task no live worker registers")
            problem = next(p for p in check_health(app).problems if p.kind == "task_unserved")
            assert problem.subject == "billing.send_invoice"
            assert "20 job(s) wait in queue default" in problem.message

            # The new release comes up beside the old one: it runs every invoice, once.
            new_worker = spawn_worker(db, "deploy_new", ["default=4"])
            wait_for(lambda: all(app.get_job(j).state.value == "succeeded" for j in invoices),
                     timeout=60, what="the new worker runs the new task's jobs")
            for job in map(app.get_job, invoices):
                assert job.counted_attempt == 1 and job.result == job.args[0]
            assert not [p for p in check_health(app).problems if p.kind == "task_unserved"]
        finally:
            for proc in (old_worker, new_worker):
                if proc is not None:
                    _stop(proc)


def test_health_names_a_queue_no_live_worker_serves(make_app: Any) -> None:
    from shiftwork import FakeClock

    clock = FakeClock()
    app = make_app(clock=clock)

    @app.task(queue="rates")
    def refresh() -> None: ...

    @app.task(queue="default")
    def invoice() -> None: ...

    invoice.enqueue()
    refresh.enqueue()
    app.store.fleet.workers_upsert("w1", "host", 1, {"rates": 2}, [refresh.name, invoice.name])
    assert [p.kind for p in check_health(app).problems] == []  # just enqueued: a grace
    clock.advance(120)
    app.store.fleet.workers_upsert("w1", "host", 1, {"rates": 2}, [refresh.name, invoice.name])
    problems = check_health(app).problems
    assert [(p.kind, p.subject) for p in problems] == [("queue_unserved", "default")]
    assert "1 job(s) wait, the oldest enqueued 120s ago" in problems[0].message
    assert "-q default" in problems[0].message


def test_metrics_count_the_jobs_no_live_worker_will_run(make_app: Any) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    from shiftwork.observe.metrics import Metrics

    app = make_app()

    @app.task(name="rates.refresh", queue="rates")
    def refresh() -> None: ...

    @app.task(name="billing.invoice", queue="default")
    def invoice() -> None: ...

    @app.task(name="billing.remind", queue="default")
    def remind() -> None: ...

    for _ in range(3):
        invoice.enqueue()
    refresh.enqueue()
    remind.enqueue()
    # One worker serves both queues but does not register billing.invoice.
    app.store.fleet.workers_upsert("w1", "host", 1, {"rates": 1, "default": 1},
                             ["rates.refresh", "billing.remind"])
    metrics = Metrics(app)
    try:
        found = {tuple(sorted(s.labels.items())): s.value
                 for family in text_string_to_metric_families(metrics.exposition().decode())
                 for s in family.samples if s.name == "shiftwork_unserved_jobs"}
    finally:
        metrics.close()
    assert found == {(("queue", "default"), ("task", "billing.invoice"), ("why", "task")): 3}


def test_the_dashboard_names_the_jobs_no_live_worker_will_run(make_app: Any) -> None:
    from shiftwork.web import create_dashboard

    from .test_security import TOKEN, Served, login

    app = make_app()

    @app.task(name="billing.invoice", queue="default")
    def invoice() -> None: ...

    invoice.enqueue()
    invoice.enqueue()
    app.store.fleet.workers_upsert("w1", "host", 1, {"default": 1}, ["billing.remind"])
    with Served(create_dashboard(app, token=TOKEN)) as served, served.client() as c:
        login(c)
        page = c.get("/").text
    assert "Jobs no live worker will run" in page
    assert "billing.invoice" in page and "registers the task" in page
