"""The job page's hold, release, run now and edit (issue 30), through a really served
dashboard: behind the login and the CSRF check, audited as the signed-in user."""

from __future__ import annotations

import html
from typing import Any

import httpx

from shiftwork import App, JobState
from shiftwork.web import create_dashboard

from .test_dashboard import browser  # noqa: F401  (the Chromium fixture)
from .test_security import TOKEN, Served, csrf_of, login


def _page(c: httpx.Client, job_id: int) -> str:
    return html.unescape(c.get(f"/jobs/{job_id}").text)


def _act(c: httpx.Client, job_id: int, action: str, **fields: str) -> str:
    """POST an action with the page's CSRF token; the page it lands on (with its notice)."""
    done = c.post(f"/jobs/{job_id}/{action}", data={"csrf": csrf_of(c, f"/jobs/{job_id}"),
                                                   **fields})
    assert done.status_code == 303, done.text
    return html.unescape(c.get(done.headers["location"]).text)


def test_hold_release_run_now_and_edit_on_the_job_page(make_app: Any) -> None:
    app: App = make_app()

    @app.task(queue="reports")
    def report() -> None: ...

    job = report.using(delay=3600).enqueue().id
    with Served(create_dashboard(app, token=TOKEN)) as served, served.client() as c:
        # the gate: no login, then a login without the CSRF token, change nothing
        anonymous = c.post(f"/jobs/{job}/hold")
        assert anonymous.status_code in (303, 401, 403)
        login(c)
        forged = c.post(f"/jobs/{job}/hold", data={})
        assert forged.status_code == 403
        assert app.get_job(job).state is JobState.SCHEDULED

        page = _page(c, job)
        assert f'action="/jobs/{job}/hold"' in page and f'action="/jobs/{job}/run_now"' in page
        assert f'action="/jobs/{job}/release"' not in page
        landed = _act(c, job, "hold")
        assert f"job {job} is held" in landed and f'action="/jobs/{job}/release"' in landed
        assert app.get_job(job).state is JobState.HELD

        landed = _act(c, job, "update", priority="7", queue="urgent", run_at="")
        assert f"job {job} is held" in landed
        got = app.get_job(job)
        assert (got.priority, got.queue, got.state) == (7, "urgent", JobState.HELD)
        refused = _act(c, job, "update", priority="1000")
        assert "priority must be" in refused and app.get_job(job).priority == 7
        refused = _act(c, job, "update", run_at="tomorrow")
        assert "run at must be an ISO 8601 instant" in refused

        assert f"job {job} is scheduled" in _act(c, job, "release")
        assert f"job {job} is available" in _act(c, job, "run_now")
        assert f"job {job} is available: it is not held" in _act(c, job, "release")

        _act(c, job, "hold")
        listed = html.unescape(c.get("/jobs", params={"state": "held"}).text)
        assert f'data-job="{job}"' in listed
        unknown = c.post(f"/jobs/{job}/frobnicate", data={"csrf": csrf_of(c, f"/jobs/{job}")})
        assert unknown.status_code == 404

    audit = app.store.console.bulk_actions_list(20)
    # newest first; refusals changed nothing and are not recorded
    assert [a.action for a in audit] == ["hold", "run_now", "release", "update", "hold"]
    assert all(a.who.startswith("dashboard login (127.0.0.1") for a in audit)
    assert {a.filter for a in audit if a.action == "update" and a.done} == {
        f"id={job} priority=7 queue=urgent"}


def test_hold_edit_and_release_in_a_real_browser(browser: Any, tmp_path: Any) -> None:  # noqa: F811
    from .conftest import FAST
    from .test_dashboard import TOKEN as BROWSER_TOKEN
    from .test_dashboard import Served as BrowserServed
    from .test_dashboard import _login, _shot

    app = App(f"sqlite:///{tmp_path / 'jobs.db'}", settings=FAST)
    app.migrate()
    app.store.debug_install_transition_guard()
    try:
        @app.task(queue="reports")
        def report() -> None: ...

        job = report.using(delay=3600).enqueue().id
        with BrowserServed(create_dashboard(app, token=BROWSER_TOKEN)) as served:
            page = _login(browser, served)
            page.goto(f"{served.url}/jobs/{job}")
            page.once("dialog", lambda d: d.accept())
            page.click("button:has-text('Hold')")
            assert f"job {job} is held" in page.locator(".flash").inner_text()
            assert page.locator("h1 .state").inner_text() == "held"
            page.fill("form.job-edit input[name=priority]", "4")
            page.fill("form.job-edit input[name=queue]", "urgent")
            page.click("form.job-edit button:has-text('Update')")
            assert f"job {job} is held" in page.locator(".flash").inner_text()
            _shot(page, "job-held")
            page.click("button:has-text('Release')")
            assert f"job {job} is scheduled" in page.locator(".flash").inner_text()
            page.click("button:has-text('Run now')")
            assert f"job {job} is available" in page.locator(".flash").inner_text()
        got = app.get_job(job)
        assert (got.state, got.priority, got.queue) == (JobState.AVAILABLE, 4, "urgent")
    finally:
        app.close()
