"""Issue 16, item 12: every page in headless Chromium at 1400 and 400 px wide.

Each page is screenshotted (into SHIFTWORK_SCREENSHOTS when set, else the test's folder)
and checked for obvious breakage: no horizontal overflow, no visible element off-screen.
The overview's chart has time and count axes; a running long job shows a progress bar with
its rate and ETA; its checkpoint is pretty JSON.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from shiftwork import App, JobContext, JobState
from shiftwork.model.records import QueueMinute
from shiftwork.web import create_dashboard

from .conftest import running_worker, wait_for
from .test_dashboard import TOKEN, Served, _login, _stalled_job, app, browser  # noqa: F401

WIDTHS = (1400, 400)

# Visible elements whose box pokes out of the viewport, left or right (1 px of rounding).
OFF_SCREEN = """() => {
  const out = [];
  for (const el of document.querySelectorAll('body *')) {
    const r = el.getBoundingClientRect();
    if (!r.width || !r.height || el.closest('title, details:not([open]) > :not(summary)')) continue;
    if (r.left < -1 || r.right > window.innerWidth + 1)
      out.push(`${el.tagName.toLowerCase()}.${el.className.baseVal ?? el.className}` +
               ` [${Math.round(r.left)}, ${Math.round(r.right)}]`);
  }
  return out;
}"""


def _check(page: Any, name: str, width: int, folder: Path) -> None:
    page.screenshot(path=str(folder / f"{name}-{width}.png"), full_page=True)
    scroll = page.evaluate("document.scrollingElement.scrollWidth")
    inner = page.evaluate("window.innerWidth")
    assert scroll <= inner, f"{name} at {width}px: scrollWidth {scroll} > {inner}"
    off = page.evaluate(OFF_SCREEN)
    assert off == [], f"{name} at {width}px: off-screen: {off[:8]}"


@pytest.fixture
def screens(tmp_path: Path) -> Path:
    import os

    folder = Path(os.environ.get("SHIFTWORK_SCREENSHOTS") or tmp_path / "screens")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_every_page_at_1400_and_400_px(app: App, browser: Any, screens: Path) -> None:  # noqa: F811
    release = threading.Event()

    @app.task(name="reports.monthly_backfill_for_every_customer_account", queue="backfill")
    def backfill(ctx: JobContext) -> None:
        ctx.progress(4200, total=10_000, message="copying invoice rows")  # sent with:
        ctx.checkpoint({"cursor": {"account": 4200, "table": "invoices"}, "done": 4200})
        release.wait(60)

    @app.task(name="flaky", queue="emails-transactional", max_attempts=1)
    def flaky() -> None:
        raise RuntimeError("smtp said no: " + "550 mailbox unavailable " * 4)

    @app.task(name="noop", queue="stalled")
    def noop() -> None: ...

    app.queue("stalled", max_wait=60)
    _stalled_job(app, "stalled", 300)
    # An hour of history, so the chart has bars from its left edge to its right.
    minute = app.store.db_now().replace(second=0, microsecond=0)
    app.store.observe.queue_minutes_add([
        QueueMinute("emails-transactional", minute - timedelta(minutes=m), succeeded=10 + m,
                    dead=m % 7 == 0) for m in range(1, 59, 3)])
    try:
        with running_worker(app, {"backfill": 1, "emails-transactional": 1}), \
                Served(create_dashboard(app, token=TOKEN)) as served:
            long_id = backfill.enqueue().id
            dead_id = flaky.enqueue().id
            wait_for(lambda: app.get_job(dead_id).state is JobState.DEAD, what="dead job")
            wait_for(lambda: app.get_job(long_id).progress is not None, what="progress")
            pages = {"overview": "/", "jobs": "/jobs", "dead": "/dead",
                     "job-running": f"/jobs/{long_id}", "job-dead": f"/jobs/{dead_id}"}
            for width in WIDTHS:
                page = _login(browser, served)
                page.set_viewport_size({"width": width, "height": 900})
                for name, path in pages.items():
                    page.goto(f"{served.url}{path}")
                    _check(page, name, width, screens)
                login = browser.new_context(viewport={"width": width, "height": 900}).new_page()
                login.goto(f"{served.url}/login")
                _check(login, "login", width, screens)

                # The chart: time along the bottom over the whole hour, counts up the side.
                page.goto(f"{served.url}/")
                times = page.locator("svg.chart.axes .axis.time text").all_text_contents()
                assert len(times) == 5 and times[-1] == "now", times
                assert page.locator("svg.chart.axes .axis.count text").first.text_content() == "0"
                # The running job: a bar, the rate, the ETA; the checkpoint pretty-printed.
                page.goto(f"{served.url}/jobs/{long_id}")
                assert page.locator("#progress progress").get_attribute("value") == "0.4200"
                assert "42% 4,200/10,000 copying invoice rows" in page.inner_text("#progress")
                assert page.locator(".progress-rate").inner_text().endswith(("/s", "/min"))
                assert page.locator(".progress-eta").inner_text().endswith("left")
                assert '"account": 4200' in page.inner_text("#checkpoint")
            release.set()  # before the worker stops: it would wait out its grace for the job
    finally:
        release.set()
