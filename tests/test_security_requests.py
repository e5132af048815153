"""Issue 26's findings about the dashboard's request handling, each pinned by real
requests against a really served dashboard (uvicorn in a thread, raw sockets where a
client library would not send what an attacker sends, the `shiftwork dashboard` command).

Finding numbers are the issue's ("info" for its informational items); each test names
the one it pins.
"""

from __future__ import annotations

import re
import socket
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Mount

from shiftwork import App
from shiftwork.testing import drain
from shiftwork.web import create_dashboard

from .test_security import (
    TOKEN,
    Served,
    app,  # noqa: F401  (the fixture: a SQLite app on a fake clock)
    csrf_of,
    dashboard_process,
    login,
)

FIELD = b"a" * 1_000_000  # under Starlette's 1 MB part limit: each field was held whole


def chunked_post(url: str, path: str, fields: int, headers: str = "") -> str:
    """POST ``fields`` urlencoded fields of 1 MB with ``Transfer-Encoding: chunked`` (no
    Content-Length to refuse), as the attack did; the status line the server answered."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as conn:
        conn.sendall(f"POST {path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
                     "Content-Type: application/x-www-form-urlencoded\r\n"
                     f"Transfer-Encoding: chunked\r\n{headers}\r\n".encode())
        try:
            for i in range(fields):
                name = b"f%d=" % i
                conn.sendall(b"%x\r\n" % (len(name) + len(FIELD) + 1) + name)
                conn.sendall(FIELD)  # the same bytes each time: the client holds 1 MB
                conn.sendall(b"&\r\n")
            conn.sendall(b"0\r\n\r\n")
        except OSError:
            pass  # the server answered and closed before taking it all
        return conn.recv(4096).split(b"\r\n", 1)[0].decode()


# -- 1. pre-auth memory exhaustion --------------------------------------------------------


def test_1_a_chunked_login_body_is_cut_at_the_cap_and_never_held(app: App) -> None:  # noqa: F811
    """Finding 1: a chunked POST to /login (no Content-Length) of 20 fields of 1 MB was
    read whole and held (~1 GB per request at 1,000 fields) before any check. Now the
    bytes are counted as they stream: 413 past 64 KB, and the process (server and this
    client together, traced) never holds more than a few MB."""
    with Served(create_dashboard(app, token=TOKEN)) as served:
        tracemalloc.start()
        try:
            status = chunked_post(served.url, "/login", fields=20)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert status == "HTTP/1.1 413 Request Entity Too Large", status
        assert peak < 4_000_000, f"{peak} bytes held"
        with served.client() as c:
            login(c)  # the dashboard still answers, and the 413 was not a failed login


def test_1_every_form_is_cut_at_the_cap_whatever_the_headers_say(app: App) -> None:  # noqa: F811
    """Finding 1: the cap holds for a logged-in POST too (the gate reads the form), and a
    lying Content-Length changes nothing (the stream is what is counted)."""
    with Served(create_dashboard(app, token=TOKEN)) as served, served.client() as c:
        login(c)
        cookie = "; ".join(f"{k}={v}" for k, v in c.cookies.items())
        status = chunked_post(served.url, "/dead", fields=3, headers=f"Cookie: {cookie}\r\n")
        assert status.startswith("HTTP/1.1 413"), status
        assert c.post("/dead", content=b"x" * 100_000,
                      headers={"Content-Type": "application/x-www-form-urlencoded"}
                      ).status_code == 413


# -- 4. login lockout from any website ---------------------------------------------------


def test_4_another_site_cannot_lock_the_operator_out(app: App) -> None:  # noqa: F811
    """Finding 4: twelve no-cors POSTs to /login from another origin counted as failed
    logins and locked the operator out. A foreign Origin is refused before counting."""
    web = create_dashboard(app, token=TOKEN, max_auth_failures=3)
    with Served(web) as served, served.client() as c:
        for origin in ["https://evil.example"] * 11 + ["null"]:
            refused = c.post("/login", data={"token": "guess"}, headers={"Origin": origin})
            assert refused.status_code == 403 and "cross-site" in refused.text
        no_origin = c.post("/login", data={"token": "guess"},
                           headers={"Sec-Fetch-Site": "cross-site"})  # Origin stripped
        assert no_origin.status_code == 403
        login(c, Origin=served.url)  # its own origin passes, and nothing was counted


def test_4_a_correct_token_is_not_locked_out_by_other_failures(app: App) -> None:  # noqa: F811
    """Finding 4: failures from the operator's address (a colleague behind the same NAT,
    a guesser) refused the correct token, in the form and as a Bearer script. A browser
    that logged in before is counted apart (its device cookie); wrong login forms do not
    count against Bearer tokens."""
    web = create_dashboard(app, token=TOKEN, max_auth_failures=3)
    with Served(web) as served, served.client() as operator:
        login(operator)
        operator.post("/logout", data={"csrf": csrf_of(operator)})
        with served.client() as guesser:
            for _ in range(3):
                assert guesser.post("/login", data={"token": "x"}).status_code == 401
            assert guesser.post("/login", data={"token": TOKEN}).status_code == 429
        login(operator)  # the same address, but a browser known to have had the token
        with served.client() as script:
            ok = script.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
            assert ok.status_code == 200


# -- 5. rotating X-Forwarded-For ---------------------------------------------------------


def test_5_rotating_forwarded_for_still_meets_the_limit(app: App) -> None:  # noqa: F811
    """Finding 5: with --proxy-headers, a trusted peer (any local process, by default)
    sending a new X-Forwarded-For per attempt was never limited. The peer's own address
    is counted too, with a budget shared by all its clients (ten times one client's)."""
    web = create_dashboard(app, token=TOKEN, max_auth_failures=2)
    with Served(web, proxy_headers=True, forwarded_allow_ips="127.0.0.1") as served, \
            served.client() as c:
        answers = [c.post("/login", data={"token": "x"},
                          headers={"X-Forwarded-For": f"198.51.100.{i}"}).status_code
                   for i in range(1, 25)]
        assert answers[:20] == [401] * 20 and set(answers[20:]) == {429}, answers


# -- 7. non-ASCII digits in the job search -----------------------------------------------


def test_7_a_non_ascii_digit_search_is_not_a_500(make_app: Callable[..., App],
                                                 engine: str) -> None:
    """Finding 7: `GET /jobs?q=²` (or `①`) answered 500 on both engines: isdigit() is
    true for them, int() refuses them."""
    jobs = make_app()
    with Served(create_dashboard(jobs, token=TOKEN)) as served, served.client() as c:
        login(c)
        for text in ("²", "①", "٣"):
            assert c.get("/jobs", params={"q": text}).status_code == 200, text


# -- 12. the host application's login ------------------------------------------------------


def host_site(app: App, **options: Any) -> Starlette:  # noqa: F811
    """The dashboard mounted at /ops in a host application whose login is a header."""
    def signed_in(request: Request) -> bool:
        return request.headers.get("x-user") == "ada"

    return Starlette(routes=[Mount("/ops", app=create_dashboard(
        app, authenticate=signed_in, **options))])


def test_12_host_login_mode_sends_browsers_to_the_hosts_login_and_gives_nothing_before(
        app: App) -> None:  # noqa: F811
    """Finding 12: in host-login mode (Django's with_dashboard, authenticate=) a visitor
    the host had not let in got a session cookie and its CSRF token on the 401 page, the
    login page showed a token form that can never work there, and "Log out" did nothing.
    Now: a browser is sent to the host's login_url (with ?next=), nothing is issued
    before the host says who it is, and logout is the host's (or not shown)."""
    site = host_site(app, login_url="/accounts/login", logout_url="/accounts/logout")
    with Served(site) as served, served.client() as c:
        browser = c.get("/ops/jobs?state=dead", headers={"Accept": "text/html"})
        assert browser.status_code == 303
        assert browser.headers["location"] == "/accounts/login?next=%2Fops%2Fjobs%3Fstate%3Ddead"
        script = c.get("/ops/")
        assert script.status_code == 401 and 'name="csrf"' not in script.text
        assert 'name="token"' not in script.text  # no token form: it cannot work here
        assert c.get("/ops/login").headers["location"] == "/accounts/login"
        assert not any("set-cookie" in r.headers for r in (browser, script))
        assert "set-cookie" not in c.get("/ops/login").headers

        page = c.get("/ops/", headers={"x-user": "ada"})
        assert page.status_code == 200 and "set-cookie" in page.headers
        assert 'href="/accounts/logout"' in page.text and 'action="/ops/logout"' not in page.text
        dead = c.get("/ops/dead", headers={"x-user": "ada"}).text
        csrf = re.search(r'name="csrf" value="([^"]+)"', dead)
        assert csrf is not None
        out = c.post("/ops/logout", data={"csrf": csrf.group(1)}, headers={"x-user": "ada"})
        assert out.status_code == 303 and out.headers["location"] == "/accounts/logout"
    with Served(host_site(app)) as served, served.client() as c:  # no logout_url: no button
        page = c.get("/ops/", headers={"x-user": "ada"})
        assert page.status_code == 200 and "Log out" not in page.text
        assert c.get("/ops/", headers={"Accept": "text/html"}).status_code == 401


# -- informational items --------------------------------------------------------------------


def test_info_the_job_page_pages_its_dependants_and_steps(app: App) -> None:  # noqa: F811
    """Info: the job page had no size limit (50,000 dependants rendered 4.35 MB, a
    20,000-step workflow 3.5 MB). Each long list is shown a page of 100 at a time."""
    @app.task(name="parent")
    def parent() -> None: ...

    @app.task(name="child")
    def child() -> None: ...

    @app.workflow(name="long_flow")
    def long_flow(wf: Any) -> None:
        for i in range(150):
            wf.step(f"s{i}", lambda: None)

    first = parent.enqueue().id
    app.enqueue_many([child.using(after=[first]).call() for _ in range(250)])
    flow = long_flow.enqueue().id
    drain(app)
    with Served(create_dashboard(app, token=TOKEN)) as served, served.client() as c:
        login(c)
        page = c.get(f"/jobs/{first}").text
        dependants = re.findall(r'<a href="/jobs/(\d+)">', page.split("run after it")[1])
        assert len(dependants) == 100 and "1\u2013100 of 250" in page
        assert f'href="/jobs/{first}?children=100">next 100' in page
        third = c.get(f"/jobs/{first}", params={"children": "200"}).text
        assert "201\u2013250 of 250" in third and "next 100" not in third
        steps = c.get(f"/jobs/{flow}").text
        assert len(re.findall(r'<td data-label="step">s\d+</td>', steps)) == 100
        assert "1\u2013100 of 150" in steps
        assert c.get(f"/jobs/{flow}", params={"steps": "x²"}).status_code == 200


def test_info_dependency_and_group_links_carry_the_mount_prefix(app: App) -> None:  # noqa: F811
    """Info: under a mounted dashboard, the job page's dependency and group links and the
    group page's job links lacked the mount prefix."""
    @app.task(name="step")
    def step(results: Any = None) -> None: ...

    first = step.enqueue().id
    second = step.using(after=[first]).enqueue().id
    group = app.group([step.call(), step.call()], then=step.call())
    group_id = group.id
    site = Starlette(routes=[Mount("/ops", app=create_dashboard(app, token=TOKEN))])
    with Served(site) as served, served.client() as c:
        login_page = c.post("/ops/login", data={"token": TOKEN})
        assert login_page.status_code == 303
        page = c.get(f"/ops/jobs/{first}").text
        assert f'href="/ops/jobs/{second}"' in page
        member = app.store.deps.group_members(group_id)[0]
        assert f'href="/ops/groups/{group_id}"' in c.get(f"/ops/jobs/{member}").text
        assert f'href="/ops/jobs/{member}"' in c.get(f"/ops/groups/{group_id}").text
        assert 'href="/jobs/' not in page and 'href="/groups/' not in page


def test_info_only_the_login_page_itself_is_public(app: App) -> None:  # noqa: F811
    """Info: every path starting with /login counted as public (it passed the gate)."""
    with Served(create_dashboard(app, token=TOKEN)) as served, served.client() as c:
        for path in ("/loginx", "/login.php", "/login-admin/metrics"):
            assert c.get(path).status_code == 401, path
        assert c.get("/login").status_code == 200


def test_info_the_login_page_shows_no_navigation_logout_or_error_on_a_first_visit(
        app: App) -> None:  # noqa: F811
    """Info (and issue 27's item 7): the login page showed the navigation, a "Log out"
    button and a red error banner to someone who had done nothing wrong, and its hint
    named --token but not --token-file."""
    with Served(create_dashboard(app, token=TOKEN)) as served, served.client() as c:
        for path in ("/", "/login"):
            page = c.get(path).text
            assert "<nav>" not in page and "Log out" not in page, path
            assert 'class="flash error"' not in page, path
            assert "--token-file" in page and 'name="token"' in page, path
        wrong = c.post("/login", data={"token": "nope-nope"})
        assert wrong.status_code == 401 and 'class="flash error"' in wrong.text


def test_info_a_trailing_slash_redirect_never_follows_the_host_header(app: App) -> None:  # noqa: F811
    """Info: `/jobs/` redirected to whatever `Host` said (Starlette builds the URL from
    it). The dashboard redirects by path; `allowed_hosts` refuses other Host headers."""
    with Served(create_dashboard(app, token=TOKEN)) as served, served.client() as c:
        moved = c.get("/jobs/?state=dead", headers={"Host": "evil.example"})
        assert moved.status_code == 307 and moved.headers["location"] == "/jobs?state=dead"
        for path in ("//evil.example/", "/\\evil.example/"):  # read as another site
            answer = c.get(path)
            assert not answer.headers.get("location", "").startswith(("//", "/\\")), path
    web = create_dashboard(app, token=TOKEN, allowed_hosts=["127.0.0.1", "*.example.com"])
    with Served(web) as served, served.client() as c:
        refused = c.get("/login", headers={"Host": "evil.example"})
        assert refused.status_code == 400 and "content-security-policy" in refused.headers
        assert c.get("/login", headers={"Host": "jobs.example.com"}).status_code == 200
        login(c)


def test_info_the_allowed_host_option_of_the_command(tmp_path: Path) -> None:
    """Info: `shiftwork dashboard --allowed-host` gives the allowed-hosts list."""
    proc, url, _ = dashboard_process(tmp_path, "--allowed-host", "127.0.0.1",
                                     env={"SHIFTWORK_DASHBOARD_TOKEN": TOKEN})
    try:
        with httpx.Client(base_url=url) as c:
            assert c.get("/login", headers={"Host": "evil.example"}).status_code == 400
            login(c)
    finally:
        proc.terminate()
        proc.wait(10)


def test_info_a_500_carries_the_security_headers(app: App) -> None:  # noqa: F811
    """Info: a 500 (an unexpected error from the store) had none of the security
    headers. (A storage-seam fault stands in for any bug.)"""
    def broken(*args: Any) -> Any:
        raise RuntimeError("storage fault")

    with Served(create_dashboard(app, token=TOKEN)) as served, served.client() as c:
        login(c)
        app.store.console.page = broken  # type: ignore[method-assign]
        failed = c.get("/jobs")
        assert failed.status_code == 500 and "storage fault" not in failed.text
        for header in ("content-security-policy", "x-frame-options", "x-content-type-options"):
            assert header in failed.headers, header
