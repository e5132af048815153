"""The web dashboard, driven in real headless Chromium (Debian's, via Playwright)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from shiftwork import App, ConfigurationError, JobNotFoundError, JobState
from shiftwork.model.new_job import NewJob
from shiftwork.schedules.stored import schedules_of
from shiftwork.testing import drain
from shiftwork.web import create_dashboard

from .conftest import FAST, IN_CI, running_worker, wait_for

CHROMIUM = os.environ.get("SHIFTWORK_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]
TOKEN = "test-token-0123456789"
SCREENS = os.environ.get("SHIFTWORK_SCREENSHOTS")  # a folder: save a PNG of each page there


def _need_browser() -> Any:
    why = None
    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        why = f"Chromium is not installed at {CHROMIUM} (apt-get install chromium)"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        why = why or "the playwright package is not installed (pip install playwright)"
    if why:
        if IN_CI:
            pytest.fail(why + ", and CI must not skip the browser tests")
        pytest.skip(why)
    return sync_playwright


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Served:
    """The dashboard on uvicorn, in a thread."""

    def __init__(self, asgi: Any) -> None:
        import uvicorn

        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(asgi, host="127.0.0.1", port=self.port,
                                                    log_level="warning", lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Served:
        self.thread.start()
        wait_for(lambda: self.server.started, what="dashboard up")
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    app = App(f"sqlite:///{tmp_path / 'jobs.db'}", settings=FAST)
    app.migrate()
    app.store.debug_install_transition_guard()
    yield app
    app.close()


@pytest.fixture
def browser() -> Iterator[Any]:
    sync_playwright = _need_browser()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS)
        yield b
        b.close()


def _shot(page: Any, name: str) -> None:
    if SCREENS:
        Path(SCREENS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SCREENS) / f"{name}.png"), full_page=True)


def _login(browser: Any, served: Served) -> Any:
    page = browser.new_context().new_page()
    page.goto(f"{served.url}/login")
    page.fill("input[name=token]", TOKEN)
    page.click("button[type=submit]:has-text('Log in')")
    page.wait_for_url(f"{served.url}/")
    return page


def _stalled_job(app: App, queue: str, seconds: float, args: str = '{"args": []}') -> int:
    """A due job that has already waited ``seconds``."""
    run_at = app.store.db_now() - timedelta(seconds=seconds)
    return app.store.jobs.insert([NewJob("noop", queue, args, run_at=run_at)])[0].id


def test_dashboard_in_a_real_browser(app: App, browser: Any, tmp_path: Path) -> None:
    flag = tmp_path / "fail"
    flag.write_text("yes")

    @app.task(name="flip", queue="work", max_attempts=1)
    def flip(n: int) -> int:
        if flag.exists():
            raise RuntimeError(f"flag says fail ({n})")
        return n

    @app.task(name="noop", queue="stalled")
    def noop() -> None: ...

    app.queue("stalled", max_wait=60)
    paused: list[str] = []
    app.pause_queue = paused.append  # type: ignore[attr-defined]  (the queue-pause feature's hook)
    app.resume_queue = paused.remove  # type: ignore[attr-defined]
    stalled_id = _stalled_job(app, "stalled", 300)
    hostile = "<script>window.pwned = 1</script>"
    hostile_id = app.store.jobs.insert([NewJob("noop", "other", '{"args": [], "kwargs": '
                                               '{"note": "' + hostile.replace('"', '\\"') + '"}}',
                                               unique_key="noop:" + hostile)])[0].id

    with running_worker(app, {"work": 2}), Served(create_dashboard(app, token=TOKEN)) as served:
        dead_id = flip.enqueue(7).id
        wait_for(lambda: app.get_job(dead_id).state is JobState.DEAD, what="job dead")
        page = _login(browser, served)

        # The stalled queue's age, marked over its threshold.
        row = page.locator("tr[data-queue=stalled]")
        assert re.match(r"5\.\dm", row.locator("td.age").inner_text())
        assert "over" in row.get_attribute("class")
        assert "over" in row.locator("td.age").inner_text()
        assert "1" in page.locator("tr[data-queue=work] td").nth(4).inner_text()  # one dead
        _shot(page, "overview")

        # Retry the dead job from its page and watch it succeed.
        page.goto(f"{served.url}/dead")
        _shot(page, "dead")
        page.click(f"tr[data-job='{dead_id}'] a")
        assert "flag says fail (7)" in page.locator("details.error").first.inner_text()
        assert "Traceback" in page.locator("pre.traceback").first.inner_text()
        _shot(page, "job-dead")
        flag.unlink()
        page.click("button:has-text('Retry now')")
        assert "available again" in page.locator(".flash").inner_text()
        wait_for(lambda: app.get_job(dead_id).state is JobState.SUCCEEDED, what="retried job ok")
        page.reload()
        assert page.locator("h1 .state").inner_text() == "succeeded"
        assert page.locator("#result").inner_text().strip() == "7"
        _shot(page, "job-succeeded")

        # Pause a queue (through the app's pause_queue).
        page.goto(f"{served.url}/")
        page.locator("tr[data-queue=stalled] button:has-text('Pause')").click()
        assert "queue stalled paused" in page.locator(".flash").inner_text()
        assert paused == ["stalled"]

        # Search by id, task and key; an argument holding <script> is shown as text.
        page.goto(f"{served.url}/jobs?q={stalled_id}")
        assert page.locator("tbody tr").count() == 1
        page.goto(f"{served.url}/jobs")
        page.fill("input[name=unique_key]", "noop:" + hostile)
        page.click("button:has-text('Filter')")
        # count() does not wait: wait for the filtered page before counting its rows.
        page.wait_for_url(re.compile(r".*[?&]unique_key="))
        page.wait_for_load_state()
        assert page.locator(f"tr[data-job='{hostile_id}']").count() == 1
        _shot(page, "jobs")
        page.goto(f"{served.url}/jobs/{hostile_id}")
        assert hostile in page.locator("#kwargs").inner_text()
        assert page.evaluate("typeof window.pwned") == "undefined"
        assert page.locator("script", has_text="pwned").count() == 0

        # Bulk: make two more dead jobs, retry one and discard the other in one go each.
        flag.write_text("yes")
        more = [flip.enqueue(i).id for i in (8, 9)]
        wait_for(lambda: all(app.get_job(i).state is JobState.DEAD for i in more), what="dead")
        page.goto(f"{served.url}/dead")
        page.check(f"input[name=ids][value='{more[0]}']")
        page.check(f"input[name=ids][value='{more[1]}']")
        page.once("dialog", lambda d: d.accept())
        page.click("button:has-text('Discard selected')")
        assert "discarded 2 of 2" in page.locator(".flash").inner_text()
        assert app.list_jobs(state="dead") == []

        # Without the token: refused.
        anon = browser.new_context().new_page()
        response = anon.goto(f"{served.url}/jobs/{dead_id}")
        assert response.status == 401
        assert anon.locator("input[name=token]").count() == 1
        _shot(anon, "login")
        assert anon.goto(f"{served.url}/metrics").status == 401

        # A cross-site POST in the logged-in browser: from another port of the same host
        # (same site: the cookie goes along, the Origin check refuses it) and from another
        # site (the SameSite=Strict cookie stays home: not logged in).
        victim = _stalled_job(app, "stalled", 1)
        for host, refused_with in (("127.0.0.1", 403), ("localhost", 401)):
            attacker, server = _attacker_site(host, f"{served.url}/jobs/{victim}/cancel")
            try:
                outcome: dict[str, int] = {}

                def on_response(r: Any, outcome: dict[str, int] = outcome) -> None:
                    if f"/jobs/{victim}/cancel" in r.url:
                        outcome.setdefault("status", r.status)

                page.on("response", on_response)
                page.goto(attacker)
                wait_for(lambda o=outcome: "status" in o, what="the forged POST answered")
                page.remove_listener("response", on_response)
                assert outcome["status"] == refused_with, host
            finally:
                server.shutdown()
            assert app.get_job(victim).state is JobState.AVAILABLE


def _attacker_site(host: str, target: str) -> tuple[str, ThreadingHTTPServer]:
    """A page on another origin that submits a form to ``target`` as soon as it loads."""
    body = (f'<form id="f" method="post" action="{target}"><input name="csrf" value="guess">'
            '</form><script>document.getElementById("f").submit()</script>').encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://{host}:{server.server_address[1]}/", server


def test_a_token_or_an_auth_hook_is_required(app: App) -> None:
    with pytest.raises(ConfigurationError, match="token"):
        create_dashboard(app)
    with pytest.raises(ConfigurationError, match="too short"):
        create_dashboard(app, token="abc")


def test_the_host_applications_auth_hook_decides(app: App) -> None:
    from starlette.testclient import TestClient

    web = create_dashboard(app, authenticate=lambda r: r.headers.get("x-user") == "ops")
    client = TestClient(web, base_url="http://127.0.0.1")
    assert client.get("/").status_code == 401
    page = client.get("/", headers={"x-user": "ops"})
    assert page.status_code == 200
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert csrf is not None and csrf.group(1)
    # A POST without the form's CSRF token is refused even for an authenticated user.
    assert client.post("/dead", data={"action": "retry", "ids": "1"},
                       headers={"x-user": "ops"}).status_code == 403
    done = client.post("/dead", data={"action": "retry", "ids": "1", "csrf": csrf.group(1)},
                       headers={"x-user": "ops"}, follow_redirects=False)
    assert done.status_code == 303


def test_search_and_discard_on_both_engines(make_app: Any) -> None:
    """The store queries behind the dashboard: search by id, task, key; discard dead jobs."""
    app = make_app()

    @app.task(name="mail", queue="emails", max_attempts=1)
    def mail(to: str) -> None: ...

    a = mail.using(key="user-1").enqueue("a@example.com").id
    b = mail.enqueue("b@example.com").id
    assert [j.id for j in app.store.observe.jobs_search(str(a))] == [a]
    assert [j.id for j in app.store.observe.jobs_search("mail")] == [b, a]
    assert [j.id for j in app.store.observe.jobs_search("user-1")] == [a]  # the key as given
    assert [j.id for j in app.store.observe.jobs_search("mail:user-1")] == [a]  # the stored key
    found = app.store.observe.jobs_search(None, JobState.AVAILABLE, "emails")
    assert [j.id for j in found] == [b, a]
    assert app.store.observe.jobs_search("nothing") == []
    assert app.store.observe.jobs_discard([a]) == []  # not dead: kept
    assert app.get_job(a).state is JobState.AVAILABLE
    worker_app = make_app()

    @worker_app.task(name="mail", queue="emails", max_attempts=1)
    def bounced(to: str) -> None:
        raise RuntimeError("mailbox full")

    with running_worker(worker_app, {"emails": 1}):  # each fails its only attempt: dead
        wait_for(lambda: app.get_job(b).state is JobState.DEAD, what="dead")
    assert app.store.observe.jobs_discard([a, b, 999]) == [a, b]
    with pytest.raises(JobNotFoundError):
        app.get_job(a)


def test_top_prints_one_frame(make_app: Any) -> None:
    from rich.console import Console

    from shiftwork.observe.top import render
    from shiftwork.observe.views import overview

    app = make_app()
    app.queue("emails", max_wait=30)

    @app.task(queue="emails")
    def mail(to: str) -> None: ...

    mail.enqueue("x")
    console = Console(record=True, width=160)
    console.print(render(overview(app)))
    text = console.export_text()
    assert "emails" in text and "queues" in text and "workers" in text


def test_a_mounted_dashboard_stays_under_its_prefix_in_a_real_browser(
        app: App, browser: Any) -> None:
    """Mounted at /ops/jobs in a host app: logging in, every nav link, a job's page, a
    form's POST and its redirect, the stylesheet and the script, logging out: the browser
    never asks for a URL outside the prefix."""
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Mount, Route

    @app.task(name="boom", queue="work", max_attempts=1)
    def boom() -> None:
        raise RuntimeError("boom")

    dead_id = boom.enqueue().id
    assert drain(app).dead == 1

    def outside(request: Any) -> PlainTextResponse:
        return PlainTextResponse("the host application's own page", status_code=404)

    host = Starlette(routes=[Mount("/ops/jobs", create_dashboard(app, token=TOKEN)),
                             Route("/{rest:path}", outside)])
    with Served(host) as served:
        prefix = f"{served.url}/ops/jobs"
        page = browser.new_context().new_page()
        asked: list[str] = []
        page.on("request", lambda r: asked.append(r.url))
        page.goto(f"{prefix}/")  # not logged in: the login form, under the prefix
        page.fill("input[name=token]", TOKEN)
        page.click("button[type=submit]:has-text('Log in')")
        page.wait_for_url(f"{prefix}/")
        assert page.locator("a.brand").get_attribute("href") == "/ops/jobs/"
        # The stylesheet applied (served from the prefix): the nav is not a plain list.
        assert page.evaluate("getComputedStyle(document.querySelector('nav') || "
                             "document.body).display") != "inline"
        for name, url in (("Jobs", f"{prefix}/jobs"), ("Dead", f"{prefix}/dead"),
                          ("Overview", f"{prefix}/")):
            page.click(f"a:has-text('{name}')")
            page.wait_for_url(url)
        page.click("a:has-text('Dead')")
        page.click(f"tr[data-job='{dead_id}'] a")
        page.wait_for_url(f"{prefix}/jobs/{dead_id}")
        page.click("button:has-text('Retry now')")  # a POST, then its 303
        page.wait_for_url(re.compile(re.escape(f"{prefix}/jobs/{dead_id}?msg=")))
        assert "available again" in page.locator(".flash").inner_text()
        page.click("button:has-text('Log out')")
        page.wait_for_url(f"{prefix}/login")
        leaving = [u for u in asked if not u.startswith(f"{prefix}/")]
        assert asked and not leaving, leaving
        assert any(u.endswith("/ops/jobs/static/style.css") for u in asked)
        assert any(u.endswith("/ops/jobs/static/app.js") for u in asked)


def test_an_operator_adds_pauses_and_removes_a_runtime_schedule(
        app: App, browser: Any) -> None:
    @app.task(name="report")
    def report(customer: str) -> None: ...

    @app.periodic("0 2 * * *", name="nightly")
    def nightly() -> None: ...

    from shiftwork.schedules.scheduler import reconcile

    reconcile(app.runtime)
    with Served(create_dashboard(app, token=TOKEN)) as served:
        page = _login(browser, served)
        page.click("summary:has-text('Add a schedule')")
        form = page.locator("form.add-schedule")
        form.locator("input[name=name]").fill("report-acme")
        form.locator("input[name=cron]").fill("0 6 * * MON")
        form.locator("select[name=task]").select_option("report")
        form.locator("input[name=args]").fill('["acme"]')
        form.locator("input[name=tz]").fill("Europe/Paris")
        form.locator("select[name=catchup]").select_option("all")
        form.locator("button:has-text('Add schedule')").click()
        assert "schedule report-acme added" in page.locator(".flash").inner_text()
        info = schedules_of(app.store).get("report-acme")
        assert info.origin == "runtime" and info.defn.tz == "Europe/Paris"
        assert info.defn.catchup.value == "all" and '"acme"' in info.defn.args_json
        row = page.locator("tr[data-schedule=report-acme]")
        assert "run-time" in row.inner_text()
        # Code's schedule has no Remove button; the run-time one has.
        assert page.locator("tr[data-schedule=nightly] button:has-text('Remove')").count() == 0
        _shot(page, "schedules")

        # Bad input comes back as a message naming the problem; nothing is stored.
        page.click("summary:has-text('Add a schedule')")
        form.locator("input[name=name]").fill("broken")
        form.locator("input[name=cron]").fill("0 6 * * MOON")
        form.locator("button:has-text('Add schedule')").click()
        assert "schedule not added" in page.locator(".flash").inner_text()
        stored = schedules_of(app.store).overview(include_removed=True)
        assert "broken" not in {i.name for i in stored}

        row.locator("button:has-text('Pause')").click()
        assert "schedule report-acme paused" in page.locator(".flash").inner_text()
        assert schedules_of(app.store).get("report-acme").paused
        page.locator("tr[data-schedule=report-acme] button:has-text('Resume')").click()
        assert not schedules_of(app.store).get("report-acme").paused
        page.once("dialog", lambda d: d.accept())
        page.locator("tr[data-schedule=report-acme] button:has-text('Remove')").click()
        assert "schedule report-acme removed" in page.locator(".flash").inner_text()
        assert page.locator("tr[data-schedule=report-acme]").count() == 0
        assert schedules_of(app.store).get("report-acme").removed_at is not None
