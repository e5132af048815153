"""Durable workflows: recorded steps, replay, durable sleep, events, compensation."""

from __future__ import annotations

from typing import Any

import pytest

from shiftwork import App, Backoff, FakeClock, JobState, ShiftworkError, Workflow
from shiftwork.testing import drain
from shiftwork.workflow import EventTimeout, WorkflowError


def test_steps_run_once_and_replay_after_a_failure(wapp: App) -> None:
    calls: list[str] = []
    flaky = {"fail": True}

    def charge(order: int) -> dict[str, object]:
        calls.append("charge")
        return {"charge_id": f"ch_{order}"}

    def reserve(order: int) -> str:
        calls.append("reserve")
        if flaky["fail"]:
            flaky["fail"] = False
            raise ConnectionError("inventory service down")
        return "reserved"

    @wapp.workflow(max_attempts=3, retry=Backoff(initial=0, jitter=False))
    def place_order(wf: Workflow, order: int) -> dict[str, object]:
        charged = wf.step("charge", charge, order)
        reserved = wf.step("reserve", reserve, order)
        return {"charge": charged["charge_id"], "reserve": reserved}

    job = place_order.enqueue(7)
    first = drain(wapp)
    assert (first.retrying, first.succeeded) == (1, 1)
    assert calls == ["charge", "reserve", "reserve"]  # charge was not repeated on replay
    got = wapp.get_job(job.id)
    assert got.state is JobState.SUCCEEDED and got.result == {"charge": "ch_7",
                                                              "reserve": "reserved"}
    assert [s.name for s in wapp.workflow_history(job.id)] == ["charge", "reserve"]


def test_durable_sleep_holds_no_worker(wapp: App, clock: FakeClock) -> None:
    done: list[str] = []

    @wapp.workflow
    def reminder(wf: Workflow, user: int) -> None:
        wf.step("welcome", done.append, "welcome")
        wf.sleep("wait-a-day", 86400)
        wf.step("nudge", done.append, "nudge")

    job = reminder.enqueue(1)
    drain(wapp)
    assert done == ["welcome"]
    sleeping = wapp.get_job(job.id)
    assert sleeping.state is JobState.SCHEDULED and sleeping.attempt == 1
    clock.advance(3600)
    assert drain(wapp).ran == 0  # still asleep
    clock.advance(86400)
    drain(wapp)
    assert done == ["welcome", "nudge"]
    final = wapp.get_job(job.id)
    assert final.state is JobState.SUCCEEDED and final.errors == []
    # the suspension did not spend an attempt
    assert (final.counted_attempt, final.max_attempts) == (1, 20)


def test_wait_for_event_sent_before_or_after(wapp: App) -> None:
    @wapp.workflow
    def ship(wf: Workflow, order: int) -> str:
        shipment = wf.wait_for_event("shipped", timeout=7 * 86400)
        return str(shipment["tracking"])

    early = ship.enqueue(1)
    wapp.send_event(early.id, "shipped", {"tracking": "T-early"})  # before it even ran
    late = ship.enqueue(2)
    drain(wapp)
    assert wapp.get_job(early.id).result == "T-early"
    assert wapp.get_job(late.id).state is JobState.SCHEDULED
    wapp.send_event(late.id, "shipped", {"tracking": "T-late"})  # wakes it now
    drain(wapp)
    assert wapp.get_job(late.id).result == "T-late"
    with pytest.raises(ShiftworkError, match="not active"):
        wapp.send_event(late.id, "shipped", {})


def test_event_timeout_is_the_same_on_every_replay(wapp: App, clock: FakeClock) -> None:
    @wapp.workflow(max_attempts=1)
    def approve(wf: Workflow) -> str:
        try:
            wf.wait_for_event("approved", timeout=60)
        except EventTimeout:
            return wf.step("escalate", lambda: "escalated")
        return "approved"

    job = approve.enqueue()
    drain(wapp)
    clock.advance(61)
    drain(wapp)
    assert wapp.get_job(job.id).result == "escalated"


def test_saga_compensates_completed_steps_in_reverse(wapp: App, clock: FakeClock) -> None:
    undone: list[str] = []

    def fail_shipping(order: int) -> None:
        raise ValueError("no courier for this address")

    @wapp.workflow(max_attempts=2, retry=Backoff(initial=60, jitter=False))
    def order_saga(wf: Workflow, order: int) -> None:
        wf.step("charge", lambda: {"charge": "ch_1"},
                compensate=lambda r: undone.append(f"refund {r['charge']}"))
        wf.step("reserve", lambda: "r1", compensate=lambda r: undone.append(f"release {r}"))
        wf.step("ship", fail_shipping, order)

    job = order_saga.enqueue(9)
    drain(wapp)  # attempt 1 fails: retried, nothing undone yet
    assert undone == []
    clock.advance(61)
    drain(wapp)  # attempt 2 fails for good: compensate in reverse, once
    assert undone == ["release r1", "refund ch_1"]
    dead = wapp.get_job(job.id)
    assert dead.state is JobState.DEAD
    names = [s.name for s in wapp.workflow_history(job.id)]
    assert names == ["charge", "reserve", "compensate:reserve", "compensate:charge"]


def test_bad_workflows(wapp: App) -> None:
    with pytest.raises(WorkflowError, match="first parameter"):
        wapp.workflow(lambda: None)

    @wapp.workflow(max_attempts=1)
    def twice(wf: Workflow) -> None:
        wf.step("a", lambda: 1)
        wf.step("a", lambda: 2)

    @wapp.workflow(max_attempts=1)
    def bad_options(wf: Workflow) -> None:
        wf.step("a", lambda: 1, max_attempts=0)

    job = twice.enqueue()
    bad = bad_options.enqueue()
    drain(wapp)
    assert "used twice" in wapp.get_job(job.id).errors[0]["message"]
    assert "max_attempts must be an integer >= 1" in wapp.get_job(bad.id).errors[0]["message"]
    with pytest.raises(ShiftworkError, match="key must be a non-empty string"):
        wapp.send_event(job.id, "go", {}, key="")


def test_workflow_commands(db: dict[str, str], wapp: App, clock: FakeClock) -> None:
    from .test_cli import cli

    @wapp.workflow(name="greet_flow")
    def greet_flow(wf: Workflow) -> str:
        wf.step("hello", lambda: "hi")
        return str(wf.wait_for_event("go"))

    job = greet_flow.enqueue()
    drain(wapp)
    env_db = dict(db)
    shown = cli(env_db, "workflows", "show", str(job.id), "--dsn", db["dsn"], "--schema",
                db["schema"])
    assert shown.returncode == 0, shown.stderr
    assert "hello" in shown.stdout and "event:go" in shown.stdout and "waiting" in shown.stdout
    sent = cli(env_db, "workflows", "signal", str(job.id), "go", "--payload", '"now"',
               "--dsn", db["dsn"], "--schema", db["schema"])
    assert sent.returncode == 0, sent.stderr
    clock.advance(60)  # the command ran on the real clock, a little ahead of the fake one
    drain(wapp)
    assert wapp.get_job(job.id).result == "now"
    bad = cli(env_db, "workflows", "signal", str(job.id), "go", "--payload", "{",
              "--dsn", db["dsn"], "--schema", db["schema"])
    assert bad.returncode == 2 and "--payload must be JSON" in bad.stderr
    listed = cli(env_db, "workflows", "list", "--state", "succeeded", "--name", "greet_flow",
                 "--dsn", db["dsn"], "--schema", db["schema"])
    assert listed.returncode == 0 and "greet_flow" in listed.stdout, listed.stderr
    shown = cli(env_db, "workflows", "show", str(job.id), "--dsn", db["dsn"], "--schema",
                db["schema"])
    assert "status=succeeded" in shown.stdout and "attempt 1/20" in shown.stdout
    assert f"version={wapp.get_workflow(job.id).version}" in shown.stdout


def test_workflows_cancel_command(db: dict[str, str], wapp: App, clock: FakeClock) -> None:
    from .test_cli import cli

    undone: list[str] = []

    @wapp.workflow(name="parked")
    def parked(wf: Workflow) -> None:
        wf.step("a", lambda: 1, compensate=lambda _: undone.append("a"))
        wf.wait_for_event("never")

    job = parked.enqueue()
    drain(wapp)
    out = cli(dict(db), "workflows", "cancel", str(job.id), "--dsn", db["dsn"], "--schema",
              db["schema"])
    assert out.returncode == 0 and "cancel requested" in out.stdout, out.stderr
    clock.advance(60)  # the command ran on the real clock, a little ahead of the fake one
    drain(wapp)
    assert undone == ["a"] and wapp.get_job(job.id).state is JobState.CANCELLED
    shown = cli(dict(db), "workflows", "show", str(job.id), "--dsn", db["dsn"], "--schema",
                db["schema"])
    assert "status=cancelled" in shown.stdout and "compensate:a" in shown.stdout


def test_dashboard_job_page_shows_the_step_timeline(tmp_path: Any) -> None:
    from .test_dashboard import (
        CHROMIUM,
        CHROMIUM_FLAGS,
        FAST,
        TOKEN,
        Served,
        _login,
        _need_browser,
        create_dashboard,
    )

    sync_playwright = _need_browser()
    app = App(f"sqlite:///{tmp_path / 'jobs.db'}", settings=FAST)
    app.migrate()

    @app.workflow(name="timeline")
    def timeline(wf: Workflow) -> None:
        wf.step("charge", lambda: 1)
        wf.sleep("nap", 3600)

    job = timeline.enqueue()
    drain(app)
    with Served(create_dashboard(app, token=TOKEN)) as served, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=CHROMIUM_FLAGS)
        page = _login(browser, served)
        page.goto(f"{served.url}/jobs/{job.id}")
        assert "running" in page.inner_text("#workflow-status")
        rows = page.inner_text("#workflow-steps")
        assert "charge" in rows and "nap" in rows and "sleeping" in rows
        browser.close()
    app.close()
