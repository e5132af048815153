"""Issue 29's layout items, in headless Chromium at 1280 and 400 px, with long values
(a URL and a token in an error, a long task name, a long filter): no page scrolls
sideways, tables are cards on a narrow screen (no column squeezed to a letter a line),
and job ids and counts never wrap ("92/5")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from shiftwork import App, JobState, Workflow
from shiftwork.testing import drain
from shiftwork.web import create_dashboard

from .test_console_jobs import add_jobs
from .test_dashboard import TOKEN, Served, _login, app, browser  # noqa: F401
from .test_dashboard_layout import _check

WIDTHS = (1280, 400)
URL = "https://api.bank.example.com/v2/charges?customer=cus_" + "Q" * 180 + "&token=" + \
    "tok_" + "a1B2c3D4" * 30
TASK = "reports.monthly_backfill_for_every_customer_account_" + "x" * 60

# Cells of short words that take more lines than they have words (a word broken inside:
# a squeezed column), and id and count cells that take more than one line.
SQUEEZED = """() => {
  const out = [];
  for (const td of document.querySelectorAll('main td')) {
    const text = td.textContent.trim();
    if (!td.getBoundingClientRect().width || !text) continue;
    const words = text.split(/\\s+/);
    const range = document.createRange();
    range.selectNodeContents(td);
    const lines = new Set([...range.getClientRects()].map(x => Math.round(x.top))).size;
    if (td.matches('.id, .n') ? lines > 1
        : words.every(w => w.length <= 12) && lines > words.length)
      out.push(`${td.dataset.label || '?'}: ${text.slice(0, 30)} on ${lines} lines`);
  }
  return out;
}"""


def test_long_values_never_make_a_page_scroll_sideways(app: App, browser: Any,  # noqa: F811
                                                      tmp_path: Path) -> None:
    @app.workflow(name="timeline_" + "y" * 40)
    def timeline(wf: Workflow) -> None:
        wf.step("charge_the_customer_for_the_whole_month", lambda: 1)
        wf.sleep("wait_for_the_settlement_window", 3600)

    flow = timeline.enqueue()
    drain(app)
    for n in range(3):
        add_jobs(app, 40, task=TASK if n else "dashapp.charge_customer",
                 dead=f"ConnectionError: could not reach {URL} ({n})")
    [dead] = add_jobs(app, 1, task=TASK, dead=f"timeout talking to {URL}")
    assert app.get_job(dead).state is JobState.DEAD
    folder = tmp_path / "screens"
    folder.mkdir()
    pages = {"jobs": "/jobs", "jobs-filtered": f"/jobs?task={TASK}&error=tok_a1B2",
             "dead": "/dead", "job-dead": f"/jobs/{dead}", "workflow": f"/jobs/{flow.id}",
             "bulk": f"/jobs/bulk?action=retry&state=dead&error={URL[:150]}"}
    with Served(create_dashboard(app, token=TOKEN)) as served:
        for width in WIDTHS:
            page = _login(browser, served)
            page.set_viewport_size({"width": width, "height": 900})
            for name, path in pages.items():
                page.goto(f"{served.url}{path}")
                _check(page, name, width, folder)
                squeezed = page.evaluate(SQUEEZED)
                assert squeezed == [], f"{name} at {width}px: {squeezed[:6]}"
