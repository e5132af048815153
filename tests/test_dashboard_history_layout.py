"""Issue 29 (console-history), layout: the workflows list, a workflow page and a schedule
page in headless Chromium at 400 and 1280 px, with long names, tokens and URLs: no page
scrolls sideways, and the tables become cards on a narrow screen; and their live refresh."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from shiftwork import App, Workflow
from shiftwork.schedules.stored import StoredSchedules
from shiftwork.testing import drain
from shiftwork.web import create_dashboard

from .test_dashboard import TOKEN, Served, _login, app, browser  # noqa: F401
from .test_dashboard_layout import _check, screens  # noqa: F401

TOKENISH = "tok_" + "A9x" * 60  # one word, no place to break it
URL = "https://billing.example.com/api/v2/customers/" + "c" * 120 + "/invoices?cursor=" + "z" * 80
REFRESH_MS = 5000  # static/app.js: a live part's refresh when it sets no data-every


def test_history_pages_fit_at_400_and_1280_px(app: App, browser: Any,  # noqa: F811
                                              screens: Path) -> None:  # noqa: F811
    step = "fetch_" + "x" * 150

    @app.workflow(name="reports.monthly_backfill_for_every_customer_account_in_the_region")
    def flow(wf: Workflow) -> None:
        wf.step(step, lambda: URL)
        wf.wait_for_event("payment_confirmed_by_the_provider_" + "q" * 60, timeout=86400)

    @app.task(name="billing.nightly_invoices_for_every_customer_account_in_the_region")
    def nightly() -> None: ...

    @app.task(name="imports.customers_from_the_partner_feed_with_a_long_name")
    def chatty(ctx: Any) -> None:
        ctx.log("fetched %s", URL)
        logging.getLogger("imports").warning("token %s refused", TOKENISH)
        try:
            raise RuntimeError(URL)
        except RuntimeError:
            logging.getLogger("imports").exception("and a traceback")

    flow_id = flow.enqueue().id
    chatty_id = chatty.enqueue().id
    drain(app)
    app.send_event(flow_id, "unrelated_" + "e" * 100, {"token": TOKENISH, "url": URL},
                   key=TOKENISH[:200])
    name = "nightly-" + "n" * 80
    app.schedules.add(name, "0 2 * * *", nightly.name)
    app.schedules.trigger(name)
    drain(app)
    app.schedules.pause(name, reason=f"see {URL}")
    app.schedules.resume(name)
    pages = {"workflows": "/workflows", "workflow": f"/workflows/{flow_id}",
             "schedule": f"/schedules/{name}", "job-logs": f"/jobs/{chatty_id}",
             "all-logs": f"/jobs/{chatty_id}/logs"}
    with Served(create_dashboard(app, token=TOKEN)) as served:
        for width in (1280, 400):
            page = _login(browser, served)
            page.set_viewport_size({"width": width, "height": 900})
            for label, path in pages.items():
                page.goto(f"{served.url}{path}")
                _check(page, f"history-{label}", width, screens)
            # A narrow screen shows the lists as cards: no header row, labelled cells.
            page.goto(f"{served.url}/workflows")
            header = page.locator("table#workflows thead").is_visible()
            assert header is (width > 720)
            page.goto(f"{served.url}/workflows/{flow_id}")
            bars = page.locator("ol.timeline svg.bar")
            assert bars.count() == 2
            box = bars.first.bounding_box()
            assert box is not None and box["width"] > 0.5 * min(width, 1400) - 100


def test_history_pages_update_live_one_query_per_refresh(
        app: App, browser: Any, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """The workflows list, a workflow's timeline and a schedule's occurrences update in an
    open tab without a reload; each refresh is one request that makes one store call."""
    @app.workflow(name="live.flow")
    def flow(wf: Workflow) -> None:
        wf.sleep("nap", 3600)

    @app.task(name="live.nightly")
    def nightly() -> None: ...

    first = flow.enqueue().id
    app.schedules.add("live-nightly", "0 2 * * *", nightly.name)
    drain(app)
    calls: list[str] = []
    store = app.store
    # Each refresh's store calls, by the name they had before the store's areas: the
    # workflow statements, a job, and the stored schedules' reads (one statement each).
    watched: list[tuple[Any, str, str]] = [
        (store.workflows, "page", "workflows_page"),
        (store.workflows, "run_read", "workflow_run_read"),
        (store.workflows, "live", "workflow_live"),
        (store.workflows, "steps_get", "workflow_steps_get"),
        (store.workflows, "events_list", "workflow_events_list"),
        (store.jobs, "get", "jobs_get"),
        (StoredSchedules, "runs_history", "schedule_runs_history"),
        (StoredSchedules, "get", "schedules_get"),
        (StoredSchedules, "overview", "schedules_list")]
    for owner, method, name in watched:
        real = getattr(owner, method)

        def counted(*a: Any, _real: Any = real, _name: str = name, **k: Any) -> Any:
            calls.append(_name)
            return _real(*a, **k)

        monkeypatch.setattr(owner, method, counted)
    with Served(create_dashboard(app, token=TOKEN)) as served:
        page = _login(browser, served)
        # The page's own timers on a clock the test moves: a refresh is due every 5 s,
        # and run_for fires it at once (the fetch and the redraw are real).
        page.clock.install()
        page.goto(f"{served.url}/workflows")
        assert page.locator(f'tr[data-workflow="{first}"]').count() == 1
        url = page.url
        second = flow.enqueue().id
        drain(app)
        page.clock.run_for(REFRESH_MS)
        page.wait_for_selector(f'tr[data-workflow="{second}"]', timeout=20_000)
        assert page.url == url  # no reload, no navigation
        calls.clear()
        fragment = page.evaluate("fetch('/workflows?live=1').then(r => r.text())")
        assert calls == ["workflows_page"] and f'data-workflow="{second}"' in fragment
        assert "<html" not in fragment

        # A workflow's page: its timeline follows it, one query a refresh.
        @app.workflow(name="live.waiter")
        def waiter(wf: Workflow) -> None:
            wf.wait_for_event("go")
            wf.step("after", lambda: 1)

        waiting = waiter.enqueue().id
        drain(app)
        page.goto(f"{served.url}/workflows/{waiting}")
        assert page.locator('li[data-step="after"]').count() == 0
        app.send_event(waiting, "go", None)
        drain(app)
        page.clock.run_for(REFRESH_MS)
        page.wait_for_selector('li[data-step="after"]', timeout=20_000)
        calls.clear()
        page.evaluate(f"fetch('/workflows/{waiting}?live=1').then(r => r.text())")
        assert calls == ["workflow_live"]

        page.goto(f"{served.url}/schedules/live-nightly")
        assert page.locator("tr[data-fire]").count() == 0
        app.schedules.trigger("live-nightly")
        page.clock.run_for(REFRESH_MS)
        page.wait_for_selector("tr[data-fire]", timeout=20_000)
        calls.clear()
        page.evaluate("fetch('/schedules/live-nightly?live=1').then(r => r.text())")
        assert calls == ["schedule_runs_history"]
        # An older page does not refresh (nothing new arrives there).
        page.goto(f"{served.url}/workflows?before={second}")
        assert page.locator("[data-live]").count() == 0


def test_history_charts_fit_and_update_live(app: App, browser: Any,  # noqa: F811
                                            screens: Path, monkeypatch: Any) -> None:  # noqa: F811
    """A queue's and a task's charts with long names at 400 and 1280 px: no sideways
    scroll; a bucket the leader writes shows in an open tab without a reload."""
    from datetime import UTC, datetime

    from shiftwork.model.records import HistoryBucket
    from shiftwork.observe.rollup import BUCKET
    from shiftwork.web import history_charts
    from shiftwork.web.dashboard import path_segment

    monkeypatch.setattr(history_charts, "REFRESH_MS", 300)
    queue = "imports-from-the-partner-feed-" + "q" * 33  # a queue name's longest: 63
    task = "billing.nightly_invoices_for_every_customer_account_" + "t" * 120

    @app.task(name=task, queue=queue)
    def nightly() -> None: ...

    now = app.clock.now().timestamp() // BUCKET * BUCKET
    rows = []
    for i in range(2, 288):
        at = datetime.fromtimestamp(now - i * BUCKET, UTC)
        for q, t in ((queue, ""), ("", task)):
            rows.append(HistoryBucket(q, t, at, 12345 + i, i % 40, i % 3, 0, 12345,
                                      0.004 * i, 3600.0 + i, 86400.0 * 3 + i))
    app.store.observe.history_add(rows)
    pages = {"queue": f"/history/queues/{path_segment(queue)}",
             "task": f"/history/tasks/{path_segment(task)}"}
    with Served(create_dashboard(app, token=TOKEN)) as served:
        for width in (1280, 400):
            page = _login(browser, served)
            page.set_viewport_size({"width": width, "height": 900})
            for label, path in pages.items():
                page.goto(f"{served.url}{path}")
                assert page.locator("figure.day-chart svg.chart").count() == 4
                _check(page, f"history-charts-{label}", width, screens)
        page.goto(f"{served.url}{pages['queue']}")
        before = page.locator("p.history-summary").get_attribute("data-finished")
        last = datetime.fromtimestamp(now - BUCKET, UTC)
        app.store.observe.history_add([HistoryBucket(queue, "", last, 1000, 0, 0, 0, 1, 0.1, 0.2,
                                             1.0)])
        url = page.url
        page.wait_for_function(
            "n => document.querySelector('p.history-summary').dataset.finished != n",
            arg=before, timeout=20_000)
        assert page.url == url
        finished = page.locator("p.history-summary").get_attribute("data-finished")
        assert int(finished or 0) == int(before or 0) + 1000
