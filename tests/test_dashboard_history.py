"""Issue 29 (console-history): the workflows list, a workflow's page with its timeline and
events, and a schedule's page with its occurrence history, on both engines, through a
really served dashboard (login, CSRF, escaping as every other page)."""

from __future__ import annotations

import re

from shiftwork import App, FakeClock, JobState, Workflow
from shiftwork.model.records import WorkflowLine
from shiftwork.schedules.stored import schedules_of
from shiftwork.testing import drain
from shiftwork.web import create_dashboard

from .test_security import TOKEN, Served, csrf_of, login

HOSTILE = "<script>alert(1)</script>"


def _flows(wapp: App) -> dict[str, int]:
    """Four workflows, one at each place a list must tell apart: waiting for an event,
    sleeping, waiting for a child, finished."""

    def charge(order: int) -> str:
        return f"ch_{order}"

    @wapp.workflow(name="shop.place_order")
    def place_order(wf: Workflow, order: int) -> str:
        wf.step("charge", charge, order)
        paid = wf.wait_for_event("paid", timeout=86400)
        return str(paid)

    @wapp.workflow(name="crm.reminder")
    def reminder(wf: Workflow, user: int) -> None:
        wf.step("welcome", charge, user)
        wf.sleep("wait-a-day", 86400)

    @wapp.workflow(name="shop.child")
    def child(wf: Workflow) -> int:
        wf.sleep("nap", 3600)
        return 1

    @wapp.workflow(name="shop.parent")
    def parent(wf: Workflow) -> int:
        return int(wf.child(child))

    @wapp.workflow(name="shop.quick")
    def quick(wf: Workflow) -> str:
        return str(wf.step("only", charge, 1))

    ids = {"order": place_order.enqueue(7).id, "reminder": reminder.enqueue(1).id,
           "parent": parent.enqueue().id, "quick": quick.enqueue().id}
    drain(wapp)
    return ids


def _line(lines: list[WorkflowLine], job_id: int) -> WorkflowLine:
    return next(w for w in lines if w.id == job_id)


def test_workflows_page_query_gives_the_current_step_and_filters(wapp: App) -> None:
    ids = _flows(wapp)
    lines = wapp.store.workflows.page()
    assert [w.id for w in lines] == sorted((w.id for w in lines), reverse=True)
    order = _line(lines, ids["order"])
    assert (order.step, order.step_kind, order.step_status) == ("event:paid", "wait", "waiting")
    assert order.state is JobState.SCHEDULED and order.finished_at is None
    assert _line(lines, ids["reminder"]).step == "wait-a-day"
    parent = _line(lines, ids["parent"])
    assert parent.step_kind == "child" and len(parent.step_result["jobs"]) == 1
    quick = _line(lines, ids["quick"])
    assert quick.status.value == "succeeded" and quick.finished_at is not None
    # A part of the name, any case; a status; a keyset page.
    assert {w.id for w in wapp.store.workflows.page(task="SHOP.")} >= {
        ids["order"], ids["parent"], ids["quick"]}
    assert ids["reminder"] not in {w.id for w in wapp.store.workflows.page(task="SHOP.")}
    assert [w.id for w in wapp.store.workflows.page(status="succeeded")] == [ids["quick"]]
    # A workflow status walks its own index (migration 0023); a job state filters the jobs.
    assert wapp.store.workflows.page(status="compensating") == []
    asleep = {w.id for w in wapp.store.workflows.page(status="scheduled")}
    assert {ids["order"], ids["reminder"], ids["parent"]} <= asleep
    assert ids["quick"] not in asleep
    older = wapp.store.workflows.page(before=ids["parent"], limit=1)
    assert [w.id for w in older] == [max(i for i in (w.id for w in lines) if i < ids["parent"])]


def test_workflows_list_and_workflow_page_served(wapp: App, clock: FakeClock) -> None:
    ids = _flows(wapp)
    wapp.send_event(ids["order"], "paid", {"note": HOSTILE}, key="k-1")
    with Served(create_dashboard(wapp, token=TOKEN)) as served, served.client() as c:
        assert c.get("/workflows").status_code == 401  # behind the login, as every page
        assert c.get(f"/workflows/{ids['order']}").status_code == 401
        login(c)
        page = c.get("/workflows").text
        rows = {int(m.group(1)): m.group(2) for m in re.finditer(
            r'<tr data-workflow="(\d+)">(.*?)</tr>', page, re.S)}
        assert set(ids.values()) <= set(rows)
        assert "event &#39;paid&#39;" in rows[ids["order"]]
        assert "a sleep until" in rows[ids["reminder"]]
        assert "child workflow" in rows[ids["parent"]]
        assert "succeeded" in rows[ids["quick"]]
        assert "href=\"/workflows?" not in page  # one page: no pager
        only = c.get("/workflows", params={"name": "remind"}).text
        assert re.findall(r'data-workflow="(\d+)"', only) == [str(ids["reminder"])]
        assert c.get("/workflows", params={"status": "bogus"}).status_code == 400
        assert "before must be" in c.get("/workflows", params={"before": "x"}).text

        flow = c.get(f"/workflows/{ids['order']}").text
        steps = re.findall(r'<li class="([^"]*)" data-step="([^"]*)"', flow)
        assert [name for _, name in steps] == ["charge", "event:paid"]
        assert "wait" in steps[1][0] and "open" in steps[1][0]
        assert "wait" not in steps[0][0].split()
        assert "<svg class=\"bar\"" in flow
        # Its events, the payload escaped.
        events = flow.split('id="events"')[1]
        assert "paid" in events and "k-1" in events and "not taken yet" in events
        assert HOSTILE not in flow and "&lt;script&gt;" in flow
        # Its live refresh: the timeline and what it waits for alone, read in one query.
        live = c.get(f"/workflows/{ids['order']}", params={"live": "1"}).text
        assert "<html" not in live and 'id="events"' not in live
        assert re.findall(r'<li class="([^"]*)" data-step="([^"]*)"', live) == steps
        assert "event &#39;paid&#39;" in live.split('id="waiting-for"')[1].split("</p>")[0]
        assert f'data-live="/workflows/{ids["order"]}?live=1"' in flow
        live_store = wapp.store.workflows.live(ids["order"])
        assert live_store is not None and [s.name for s in live_store.steps] == [
            "charge", "event:paid"] and live_store.steps[1].wake_at is not None
        assert c.get("/workflows/99999999", params={"live": "1"}).status_code == 404
        parent = c.get(f"/workflows/{ids['parent']}").text
        child_id = wapp.store.workflows.page(task="shop.child")[0].id
        assert f'href="/workflows/{child_id}"' in parent  # the child workflow, linked

        # Not a workflow; no such job: 404.
        plain = wapp.task(name="plain")(lambda: None).enqueue().id
        assert c.get(f"/workflows/{plain}").status_code == 404
        assert c.get("/workflows/99999999").status_code == 404

        # The actions: CSRF as every POST; cancel stops it and it compensates.
        assert c.post(f"/workflows/{ids['reminder']}/cancel").status_code == 403
        csrf = csrf_of(c, f"/workflows/{ids['reminder']}")
        done = c.post(f"/workflows/{ids['reminder']}/cancel", data={"csrf": csrf})
        assert done.status_code == 303
        assert done.headers["location"].startswith(f"/workflows/{ids['reminder']}?msg=")
        drain(wapp)
        assert wapp.get_workflow(ids["reminder"]).status.value == "cancelled"
        again = c.get(f"/workflows/{ids['reminder']}").text
        assert 'class="sleep wait' in again and "wait open" not in again  # ended: not open
        assert c.post(f"/workflows/{ids['reminder']}/explode",
                      data={"csrf": csrf}).status_code == 404


def test_workflow_timeline_bars_follow_the_clock(wapp: App, clock: FakeClock) -> None:
    """A bar from each step's start to its record: a day's sleep is most of the axis."""
    ids = _flows(wapp)
    clock.advance(86400 + 1)
    drain(wapp)
    from shiftwork.web.workflow_view import SPAN, timeline

    job = wapp.get_job(ids["reminder"])
    line = timeline(wapp.workflow_history(job.id), wapp.get_workflow(job.id).status,
                    job.attempted_at or job.created_at, job.finished_at, clock.now())
    by_name = {b.step.name: b for b in line.bars}
    assert by_name["wait-a-day"].wait and not by_name["wait-a-day"].open
    assert by_name["wait-a-day"].width > 0.9 * SPAN
    assert by_name["welcome"].x == 0 and not by_name["welcome"].wait


def test_schedule_page_shows_occurrences_next_fires_and_actions(wapp: App,
                                                                 clock: FakeClock) -> None:
    ran: list[int] = []

    @wapp.task(name="billing.nightly_invoices")
    def nightly(n: int) -> None:
        ran.append(n)

    wapp.schedules.add("nightly-invoices", "0 2 * * *", "billing.nightly_invoices", [1])
    for _ in range(3):
        wapp.schedules.trigger("nightly-invoices")
        clock.advance(5)
    drain(wapp)
    assert len(ran) == 3
    wapp.schedules.pause("nightly-invoices", reason=f"maintenance {HOSTILE}")
    clock.advance(3 * 86400)
    wapp.schedules.resume("nightly-invoices")  # the fires meanwhile: recorded as skipped

    history = schedules_of(wapp.store).runs_history("nightly-invoices")
    assert [r.run.fire_at for r in history] == sorted((r.run.fire_at for r in history),
                                                      reverse=True)
    triggered = [r for r in history if r.run.kind.value == "trigger"]
    assert len(triggered) == 3 and all(r.job_state is JobState.SUCCEEDED for r in triggered)
    assert all(r.job_started_at is not None and r.duration is not None for r in triggered)
    skipped = [r for r in history if r.run.status.value == "skipped"]
    assert len(skipped) == 3 and all(r.job_state is None and r.run.reason == "paused"
                                     for r in skipped)
    page2 = schedules_of(wapp.store).runs_history("nightly-invoices", before=history[2].run.fire_at,
                                             limit=2)
    assert [r.run.fire_at for r in page2] == [r.run.fire_at for r in history[3:5]]

    with Served(create_dashboard(wapp, token=TOKEN)) as served, served.client() as c:
        assert c.get("/schedules/nightly-invoices").status_code == 401
        login(c)
        assert 'href="/schedules/nightly-invoices"' in c.get("/").text  # linked from overview
        page = c.get("/schedules/nightly-invoices").text
        rows = re.findall(r'<tr class="[^"]*" data-fire="[^"]*">(.*?)</tr>', page, re.S)
        assert len(rows) == 6
        assert sum("skipped" in r and "paused" in r for r in rows) == 3
        assert sum("succeeded" in r and "/jobs/" in r for r in rows) == 3
        fires = re.findall(r"<li>(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC", page)
        assert len(fires) == 5 and all(f.endswith("02:00:00") for f in fires)
        assert HOSTILE not in page
        assert c.get("/schedules/nope").status_code == 404
        assert c.get("/schedules/~%%%").status_code == 404
        bad = c.get("/schedules/nightly-invoices", params={"before": "yesterday"})
        assert bad.status_code == 400 and "ISO 8601" in bad.text
        older = c.get("/schedules/nightly-invoices", params={
            "before": history[2].run.fire_at.isoformat()}).text
        assert len(re.findall(r'data-fire="', older)) == 3

        # Its actions (the overview's routes) bring their notice back to this page.
        csrf = csrf_of(c, "/schedules/nightly-invoices")
        paused = c.post("/schedules/nightly-invoices/pause",
                        data={"csrf": csrf, "from": "schedule"})
        assert paused.status_code == 303
        assert paused.headers["location"].startswith("/schedules/nightly-invoices?msg=")
        shown = c.get(paused.headers["location"]).text
        assert "schedule nightly-invoices paused" in shown and "Resume" in shown
        elsewhere = c.post("/schedules/nightly-invoices/resume", data={"csrf": csrf})
        assert elsewhere.headers["location"].startswith("/?msg=")  # from the overview
        assert c.post("/schedules/nightly-invoices/trigger").status_code == 403  # CSRF

