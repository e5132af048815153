"""Issue 11's findings, each pinned by real requests against a running dashboard (uvicorn
in a thread, or the `shiftwork dashboard` command itself) or by the real library paths.

Finding numbers are the issue's; each test names the one it pins.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from shiftwork import App, PayloadError, PayloadTooLargeError, Settings
from shiftwork.core.clock import FakeClock
from shiftwork.core.errors import ShiftworkError
from shiftwork.testing import drain
from shiftwork.web import create_dashboard
from shiftwork.web.serve import server_config

from .conftest import FAST, PG_DSN, ROOT, require_pg, wait_for

TOKEN = "security-token-0123456789"


class Served:
    """A real uvicorn server in a thread, as `shiftwork dashboard` runs it."""

    def __init__(self, asgi: Any, **config: Any) -> None:
        import uvicorn

        self.server = uvicorn.Server(server_config(asgi, port=0, **config))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Served:
        self.thread.start()
        wait_for(lambda: self.server.started, what="dashboard up")
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.should_exit = True
        self.thread.join(10)

    def client(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, follow_redirects=False, timeout=10, **kwargs)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def app(tmp_path: Path, clock: FakeClock) -> Iterator[App]:
    app = App(f"sqlite:///{tmp_path / 'jobs.db'}", settings=FAST, clock=clock)
    app.migrate()
    yield app
    app.close()


def login(client: httpx.Client, token: str = TOKEN, **headers: str) -> httpx.Response:
    response = client.post("/login", data={"token": token}, headers=headers)
    assert response.status_code == 303, response.text
    return response


def csrf_of(client: httpx.Client, path: str = "/") -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', client.get(path).text)
    assert found is not None
    return found.group(1)


# -- 1. the gate and the Host header; dependency minimums ------------------------------------


def test_1_forged_host_header_opens_nothing(app: App) -> None:
    with Served(create_dashboard(app, token=TOKEN)) as served, served.client() as c:
        forged = {"Host": "x/login?"}
        assert c.get("/metrics", headers=forged).status_code == 401
        assert c.get("/jobs", headers=forged).status_code == 401
        response = c.post("/queues/emails/pause", data={"csrf": "x"}, headers=forged)
        assert response.status_code == 401
        assert app.store.long_jobs.queues_paused() == set()
        # The public pages stay public, whatever the Host.
        assert c.get("/login", headers=forged).status_code == 200


def test_1_gate_uses_the_real_path_when_mounted_under_a_prefix(app: App) -> None:
    from starlette.applications import Starlette
    from starlette.routing import Mount

    host = Starlette(routes=[Mount("/ops", app=create_dashboard(app, token=TOKEN))])
    with Served(host) as served, served.client() as c:
        assert c.get("/ops/metrics", headers={"Host": "x/login?"}).status_code == 401
        assert c.get("/ops/metrics").status_code == 401
        assert c.get("/ops/login").status_code == 200
        assert c.get("/ops/static/style.css").status_code == 200
        ok = c.get("/ops/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        assert ok.status_code == 200 and "shiftwork" in ok.text


def test_1_dependency_minimums_exclude_advisories() -> None:
    from importlib.metadata import version

    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    web = {Requirement(r).name.lower(): Requirement(r) for r in extras["web"] + extras["django"]}
    # django: issue 26's informational item (4.2.0 was admitted; 4.2 is past its support).
    floors = {"starlette": "1.3.1", "python-multipart": "0.0.27", "jinja2": "3.1.6",
              "uvicorn": "0.31.0", "h11": "0.16.0", "django": "5.2.17"}
    for name, floor in floors.items():
        spec = web[name].specifier
        assert spec.contains(floor), (name, str(spec))
        below = floor.rsplit(".", 1)[0] + "." + str(int(floor.rsplit(".", 1)[1]) - 1) \
            if not floor.endswith(".0") else None
        if below:
            assert not spec.contains(below), (name, str(spec))
        assert spec.contains(version(name)), f"installed {name} {version(name)} is below {spec}"


# -- 2. sessions expire and logout revokes them ----------------------------------------


def test_2_logout_revokes_a_copied_cookie_and_sessions_expire(app: App, clock: FakeClock) -> None:
    web = create_dashboard(app, token=TOKEN, session_max_age=3600)
    with Served(web) as served, served.client() as c:
        set_cookie = login(c).headers["set-cookie"]
        assert "Max-Age=3600" in set_cookie and "HttpOnly" in set_cookie
        copied = dict(c.cookies)
        assert c.get("/").status_code == 200
        c.post("/logout", data={"csrf": csrf_of(c)})
        with served.client(cookies=copied) as thief:
            assert thief.get("/").status_code == 401  # revoked on the server

        login(c)
        assert c.get("/").status_code == 200
        clock.advance(3599)
        assert c.get("/").status_code == 200
        clock.advance(2)
        assert c.get("/").status_code == 401  # expired
        login(c)
        kept = dict(c.cookies)
    # A restart (also how a new token takes effect) ends every session.
    with Served(create_dashboard(app, token=TOKEN)) as served, \
            served.client(cookies=kept) as c:
        assert c.get("/").status_code == 401


# -- 3. the token never travels in a URL -------------------------------------------------


def test_3_login_is_a_post_and_a_token_in_the_url_is_refused(app: App) -> None:
    with Served(create_dashboard(app, token=TOKEN)) as served, served.client() as c:
        response = c.get(f"/login?token={TOKEN}")
        assert response.status_code == 400 and "set-cookie" not in response.headers
        assert "not accepted" in response.text
        assert c.get("/").status_code == 401


def dashboard_process(tmp_path: Path, *args: str, env: dict[str, str] | None = None
                      ) -> tuple[subprocess.Popen[str], str, str]:
    """`shiftwork dashboard` on a free port; returns it, its URL and what it printed."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "secapp.py").write_text(
        "from shiftwork import App\n"
        f"app = App('sqlite:///{tmp_path / 'jobs.db'}')\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "shiftwork.cli", "dashboard", "secapp:app", "--port", str(port),
         *args], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT / 'src'}",
             **(env or {})})
    url = f"http://127.0.0.1:{port}"
    printed: list[str] = []
    assert proc.stdout is not None
    while True:  # the banner is printed before the server starts
        line = proc.stdout.readline()
        assert line, f"dashboard exited: {''.join(printed)}"
        printed.append(line)
        if "log in at" in line:
            if "below" in line:
                printed.append(proc.stdout.readline())
            break

    def up() -> bool:
        try:
            return httpx.get(f"{url}/login", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    wait_for(up, what="shiftwork dashboard answering")
    return proc, url, "".join(printed)


def test_3_and_4_the_command_prints_no_token_url_and_reads_secrets_from_a_file(
        tmp_path: Path) -> None:
    # A made-up token: printed on its own, never inside a URL.
    proc, url, printed = dashboard_process(tmp_path)
    try:
        made = printed.strip().splitlines()[-1]
        assert "token=" not in printed and f"{url}/login" in printed
        with httpx.Client(base_url=url) as c:
            login(c, made)
    finally:
        proc.terminate()
        proc.wait(10)
    # --token-file: the secret is not on the command line (`ps` shows argv).
    secret = tmp_path / "token"
    secret.write_text("file-token-0123456789\n")
    secret.chmod(0o600)
    proc, url, printed = dashboard_process(tmp_path, "--token-file", str(secret))
    try:
        assert "file-token" not in printed and "warning" not in printed
        argv = Path(f"/proc/{proc.pid}/cmdline").read_bytes().decode()
        assert "file-token" not in argv
        with httpx.Client(base_url=url) as c:
            login(c, "file-token-0123456789")
    finally:
        proc.terminate()
        proc.wait(10)


def cli(*args: str, env: dict[str, str] | None = None, cwd: Path = ROOT
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "shiftwork.cli", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=60,
                          env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}",
                               "COLUMNS": "200", **(env or {})})


def test_4_token_from_the_environment_and_a_warning_for_token_on_the_command_line(
        tmp_path: Path) -> None:
    proc, url, printed = dashboard_process(
        tmp_path, env={"SHIFTWORK_DASHBOARD_TOKEN": "env-token-0123456789"})
    try:
        assert "env-token" not in printed and "warning" not in printed
        with httpx.Client(base_url=url) as c:
            login(c, "env-token-0123456789")
    finally:
        proc.terminate()
        proc.wait(10)
    proc, url, printed = dashboard_process(tmp_path, "--token", "argv-token-0123456789")
    proc.terminate()
    proc.wait(10)
    assert "--token is visible to other users in `ps`" in printed


@pytest.mark.postgres
def test_4_database_secrets_from_the_environment() -> None:
    require_pg()
    from psycopg.conninfo import conninfo_to_dict

    info = conninfo_to_dict(PG_DSN)
    keyvalue = " ".join(f"{k}={v}" for k, v in info.items() if k != "password")
    # SHIFTWORK_DSN instead of --dsn, in libpq's key=value form; PGPASSWORD as psycopg
    # reads it (the test server trusts, so any password is accepted: what is checked is
    # that the command runs with no password on its command line).
    env = {"SHIFTWORK_DSN": keyvalue, "PGPASSWORD": "from-the-environment"}
    assert cli("migrate", "--schema", "sec_env", env=env).returncode == 0
    result = cli("queues", "--json", "--schema", "sec_env", env=env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []
    warned = cli("queues", "--dsn", PG_DSN.replace("postgres@", "postgres:pw@"),
                 "--schema", "sec_env", "--json")
    assert "password in --dsn is visible" in warned.stderr
    import psycopg

    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute('DROP SCHEMA IF EXISTS "sec_env" CASCADE')


# -- 5. every DSN shape is redacted ---------------------------------------------------


@pytest.mark.parametrize("dsn", [
    "postgresql://admin:hunter2@127.0.0.1:1/db",
    "postgresql://127.0.0.1:1/db?user=admin&password=hunter2",
    "host=127.0.0.1 port=1 dbname=db user=admin password=hunter2",
    "host=127.0.0.1 port=1 dbname=db password='hunter2 with spaces'",
    "host=127.0.0.1 password=hunter2 port=notaport",
    "hunter2 password=hunter2",
])
def test_5_a_dsn_password_never_appears_in_an_error(dsn: str, tmp_path: Path) -> None:
    with pytest.raises(ShiftworkError) as caught:
        App(dsn).queue_stats()
    assert "hunter2" not in str(caught.value), str(caught.value)
    result = cli("queues", "--dsn", dsn)
    assert result.returncode != 0 and "hunter2" not in result.stderr + result.stdout


def test_5_log_records_are_redacted_too() -> None:
    from shiftwork.observe.logging import JsonFormatter, TextFormatter

    record = logging.LogRecord("x", logging.ERROR, "f", 1, "cannot reach %s", (
        "host=db password=hunter2",), None)
    assert "hunter2" not in TextFormatter().format(record)
    assert "hunter2" not in JsonFormatter().format(record)


# -- 6. failed logins and Bearer tokens are rate-limited ----------------------------------


def test_6_failed_logins_and_bearer_tokens_get_429(app: App, clock: FakeClock) -> None:
    web = create_dashboard(app, token=TOKEN, max_auth_failures=3, auth_failure_window=60)
    with Served(web) as served, served.client() as c:
        for _ in range(3):
            assert c.post("/login", data={"token": "guess"}).status_code == 401
        refused = c.post("/login", data={"token": TOKEN})  # even the right one, for now
        assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
        assert "too many failed login attempts" in refused.text
        # Wrong login forms do not lock out a script's right Bearer token (issue 26, 4).
        bearer = c.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        assert bearer.status_code == 200
        clock.advance(61)
        login(c)
        with served.client() as script:
            for _ in range(3):
                wrong = script.get("/metrics", headers={"Authorization": "Bearer nope-nope"})
                assert wrong.status_code == 401
            limited = script.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
            assert limited.status_code == 429 and limited.headers["retry-after"]
        assert c.get("/").status_code == 200  # a live session is never slowed down


# -- 7. behind a TLS-terminating proxy ----------------------------------------------------


def test_7_behind_a_tls_proxy_cookie_is_secure_hsts_sent_origin_checked(app: App) -> None:
    paused: list[str] = []
    app.pause_queue = paused.append  # type: ignore[method-assign]
    proxied = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.7",
               "Host": "jobs.example.com"}
    web = create_dashboard(app, token=TOKEN, max_auth_failures=2)
    with Served(web, proxy_headers=True, forwarded_allow_ips="127.0.0.1") as served, \
            served.client(headers=proxied) as c:
        response = login(c)
        assert "Secure" in response.headers["set-cookie"]
        assert response.headers["strict-transport-security"].startswith("max-age=")
        cookie = response.headers["set-cookie"].split(";")[0].split("=", 1)
        c.cookies.set(cookie[0], cookie[1])  # httpx keeps Secure cookies for https only
        csrf = csrf_of(c)
        done = c.post("/queues/emails/pause", data={"csrf": csrf},
                      headers={"Origin": "https://jobs.example.com"})
        assert done.status_code == 303 and paused == ["emails"]
        refused = c.post("/queues/emails/pause", data={"csrf": csrf},
                         headers={"Origin": "https://evil.example"})
        assert refused.status_code == 403
        # Failures are counted per client address as the proxy reported it.
        for _ in range(2):
            c.post("/login", data={"token": "x"}, headers={"X-Forwarded-For": "198.51.100.1"})
        blocked = c.post("/login", data={"token": TOKEN},
                         headers={"X-Forwarded-For": "198.51.100.1"})
        assert blocked.status_code == 429
        assert login(c).status_code == 303  # 203.0.113.7 is not blocked
    # Without --proxy-headers (or from an untrusted address) the headers count for nothing.
    with Served(web, proxy_headers=True, forwarded_allow_ips="10.9.9.9") as served, \
            served.client(headers=proxied) as c:
        response = login(c)
        assert "Secure" not in response.headers["set-cookie"]
        assert "strict-transport-security" not in response.headers


# -- 8. log forging and terminal escapes --------------------------------------------------


def test_8_a_newline_in_a_message_cannot_forge_a_log_line() -> None:
    from shiftwork.observe.logging import TextFormatter

    forged = "boom\n2030-01-01 00:00:00,000 INFO shiftwork: all good \x1b[2J"
    record = logging.LogRecord("shiftwork.worker", logging.ERROR, "f", 1, "job failed: %s",
                               (forged,), None)
    line = TextFormatter().format(record)
    assert "\n" not in line and "\x1b" not in line
    assert "boom\\n2030-01-01" in line and "\\x1b[2J" in line
    try:
        raise ValueError("one\nINFO forged")
    except ValueError:
        record.exc_info = sys.exc_info()
        record.exc_text = None
    text = TextFormatter().format(record)
    assert all(line.startswith("    ") for line in text.splitlines()[1:])


def test_8_cli_prints_job_data_as_plain_text(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'jobs.db'}"
    app = App(db, settings=FAST)
    app.migrate()
    hostile = "[bold red]fake[/bold red] \x1b[2J\x1b]0;title\x07 line\nforged"

    @app.task(name="bad", max_attempts=1)
    def bad(note: str) -> None:
        raise RuntimeError(hostile)

    job_id = bad.enqueue(hostile).id
    drain(app)
    app.close()
    for args in (["jobs", "show", str(job_id)], ["jobs", "list"]):
        result = cli(*args, "--dsn", db)
        assert result.returncode == 0, result.stderr
        assert "\x1b" not in result.stdout and "\x07" not in result.stdout
        assert "[bold red]" in result.stdout or "[bold" in result.stdout  # shown, not applied
        assert "\\x1b[2J" in result.stdout


# -- 9. malformed cookies and form fields -----------------------------------------------


def test_9_malformed_cookie_and_nul_in_fields_are_4xx(app: App) -> None:
    with Served(create_dashboard(app, token=TOKEN)) as served, served.client() as c:
        for cookie in ("shiftwork_session=é.é".encode(),
                       b"shiftwork_session=\xff\xfe.\x80", b"shiftwork_session=...;;=="):
            assert c.get("/", headers={"Cookie": cookie}).status_code == 401  # type: ignore[dict-item]
        login(c)
        assert c.get("/jobs", params={"q": "a\x00b"}).status_code == 400
        assert c.get("/jobs/99999999999999999999999").status_code == 404
        assert c.get("/schedules/%00/x").status_code in (400, 404, 405)
        csrf = csrf_of(c)
        assert c.post("/dead", data={"csrf": csrf, "action": "retry",
                                     "ids": "99999999999999999999999"}).status_code == 400
        assert c.post("/dead", data={"csrf": csrf, "action": "x\x00"}).status_code == 400
        multipart = c.post("/dead", content=b"--b\r\nbroken",
                           headers={"Content-Type": "multipart/form-data; boundary=b"})
        assert multipart.status_code in (400, 403)  # unparseable, or parsed without csrf
        assert c.post("/login", content=b"x" * 100_000).status_code == 413


# -- 10. every stored blob has a limit ----------------------------------------------------


def test_10_every_stored_blob_is_bounded(tmp_path: Path) -> None:
    limits = Settings(max_args_bytes=1000, max_checkpoint_bytes=1000, max_result_bytes=1000,
                      max_progress_message_bytes=100, max_step_result_bytes=1000,
                      max_event_payload_bytes=1000, max_unique_key_bytes=100,
                      max_json_depth=20)
    app = App(f"sqlite:///{tmp_path / 'jobs.db'}", settings=limits)
    app.migrate()
    big = "x" * 2000

    @app.task(name="echo", max_attempts=1)
    def echo(value: Any) -> Any:
        return value

    def raised(fn: Any) -> str:
        with pytest.raises(PayloadTooLargeError) as caught:
            fn()
        return str(caught.value)

    assert "arguments: 2025 bytes" in raised(lambda: echo.enqueue(big))
    assert "max_args_bytes" in raised(lambda: echo.enqueue(big))
    assert "unique key: 2" in raised(lambda: echo.using(key=big).enqueue(1))
    deep: Any = 1
    for _ in range(25):
        deep = [deep]
    assert "max_json_depth" in raised(lambda: echo.enqueue(deep))
    assert "integer of" in raised(lambda: echo.enqueue(10**5000))
    with pytest.raises(PayloadError, match="NUL"):
        echo.enqueue("a\x00b")
    assert "event 'go': payload: 2002 bytes" in raised(lambda: app.send_event(1, "go", big))

    @app.task(name="writer", max_attempts=1)
    def writer(ctx: Any, what: str) -> None:
        if what == "checkpoint":
            ctx.checkpoint(big)
        elif what == "progress":
            ctx.progress(1, 2, "m" * 200)

    @app.workflow(name="flow", max_attempts=1)
    def flow(wf: Any) -> None:
        wf.step("huge", lambda: big)

    ids = {"result": echo.enqueue("y" * 900).id}  # fits as an argument...
    app.settings = Settings(**{**limits.__dict__, "max_result_bytes": 500})  # ...not as a result
    ids["checkpoint"] = writer.enqueue("checkpoint").id
    ids["progress"] = writer.enqueue("progress").id
    ids["step"] = flow.enqueue().id
    drain(app)
    expected = {"result": "return value: 902 bytes, over the 500-byte limit "
                          "(Settings.max_result_bytes)",
                "checkpoint": "checkpoint: 2002 bytes, over the 1000-byte limit "
                              "(Settings.max_checkpoint_bytes)",
                "progress": "progress message: 200 bytes, over the 100-byte limit "
                            "(Settings.max_progress_message_bytes)",
                "step": "workflow step 'huge': result: 2002 bytes, over the 1000-byte limit "
                        "(Settings.max_step_result_bytes)"}
    for what, job_id in ids.items():
        job = app.get_job(job_id)
        assert job.state.value == "dead", (what, job.state)
        assert expected[what] in job.errors[-1]["message"], (what, job.errors[-1]["message"])
        assert job.result is None and job.checkpoint is None
    app.close()


# -- 11. notices and the unknown-task error -----------------------------------------------


def test_11_only_the_dashboards_own_notices_are_shown(app: App) -> None:
    paused: list[str] = []
    app.pause_queue = paused.append  # type: ignore[method-assign]
    with Served(create_dashboard(app, token=TOKEN)) as served, served.client() as c:
        login(c)
        phish = "Session expired: call +1 555 0100 and read out your token"
        page = c.get("/", params={"msg": phish})
        assert page.status_code == 200 and "555 0100" not in page.text
        forged = c.get("/", params={"msg": phish, "sig": "0" * 64})
        assert "555 0100" not in forged.text
        done = c.post("/queues/emails/pause", data={"csrf": csrf_of(c)})
        assert done.status_code == 303
        assert "queue emails paused" in c.get(done.headers["location"]).text


def test_11_the_unknown_task_error_lists_no_task_names(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'jobs.db'}"
    sender = App(db, settings=FAST)
    sender.migrate()

    @sender.task(name="only.on.the.sender")
    def gone() -> None: ...

    job_id = gone.enqueue().id
    worker_app = App(db, settings=FAST)

    @worker_app.task(name="internal.secret_admin_task")
    def other() -> None: ...

    from .conftest import running_worker

    with running_worker(worker_app, {"default": 1}):  # passes the job over, unrun
        wait_for(lambda: sender.get_job(job_id).errors, what="the job passed over")
    assert sender.get_job(job_id).state.value == "available"
    message = sender.get_job(job_id).errors[-1]["message"]
    assert "only.on.the.sender" in message and "secret_admin_task" not in message
    sender.close()
    worker_app.close()


# -- properties: arbitrary input gets a PayloadError or a 4xx, never anything else ------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from shiftwork.core.payload import encode_args, encode_json  # noqa: E402

ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=30)
SCALARS = (st.none() | st.booleans() | st.floats(allow_nan=True, allow_infinity=True)
           | st.integers() | st.integers(min_value=10**4000, max_value=10**4300) | ANY_TEXT)
JSONISH = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=4) | st.tuples(inner)
    | st.dictionaries(ANY_TEXT | st.integers(), inner, max_size=4), max_leaves=25)


def nested(depth: int, leaf: Any) -> Any:
    for i in range(depth):
        leaf = [leaf] if i % 2 else {"k": leaf}
    return leaf


@settings(max_examples=300, deadline=None)
@given(value=JSONISH | st.builds(nested, st.integers(0, 3000), SCALARS)
       | st.binary(max_size=200).map(lambda b: _loads_or_text(b)))
def test_property_payload_validators_raise_only_payload_errors(value: Any) -> None:
    limit = Settings(max_json_depth=50, max_result_bytes=2000).limit("max_result_bytes")
    try:
        text = encode_json(value, "v", limit)
    except PayloadError:
        pass
    else:
        assert len(text.encode()) <= 2000
        json.loads(text)  # reads back
    with contextlib.suppress(PayloadError):
        encode_args("t", [value], {"k": value}, limit)


def _loads_or_text(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return raw.decode("utf-8", "surrogateescape")


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=JSONISH)
def test_property_whatever_validates_is_stored_and_read_back(make_app: Any, value: Any) -> None:
    app = getattr(make_app, "made", None) or make_app()
    make_app.made = app  # one app (one database) for every example

    @app.task(name="keep") if "keep" not in app.tasks else (lambda f: app.tasks["keep"])
    def keep(value: Any) -> None: ...

    try:
        job_id = app.tasks["keep"].enqueue(value).id
    except PayloadError:
        return
    assert numbers_as_floats(app.get_job(job_id).args[0]) == numbers_as_floats(
        json.loads(json.dumps(value)))


def numbers_as_floats(value: Any) -> Any:
    """PostgreSQL's jsonb gives a large float back as an int (2.67e16 as 26711519310559870):
    compare numbers as the floats they are, except ints too large for one."""
    if isinstance(value, list):
        return [numbers_as_floats(v) for v in value]
    if isinstance(value, dict):
        return {k: numbers_as_floats(v) for k, v in value.items()}
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return float(value)
        except OverflowError:
            return value
    return value


ROUTES = ["/", "/jobs", "/dead", "/jobs/1", "/metrics", "/health", "/login",
          "/jobs/1/retry", "/jobs/1/cancel", "/jobs/1/discard", "/dead",
          "/queues/emails/pause", "/queues/emails/resume", "/schedules/nightly/trigger",
          "/schedules", "/schedules/nightly/pause", "/schedules/nightly/resume",
          "/schedules/nightly/remove", "/jobs/bulk", "/workflows", "/workflows/1",
          "/workflows/1/cancel", "/workflows/1/retry", "/workflows/1/fork", "/schedules/nightly",
          "/schedules/~bmlnaHRseQ", "/jobs/1/logs", "/history/queues/emails",
          "/history/tasks/mail.send", "/history/tasks/a%2Fb", "/jobs/1/hold",
          "/jobs/1/release", "/jobs/1/run_now", "/jobs/1/update"]


def test_property_dashboard_answers_arbitrary_forms_and_queries_with_4xx(app: App) -> None:
    from urllib.parse import quote_from_bytes

    paused: list[str] = []
    app.pause_queue = paused.append  # type: ignore[method-assign]
    app.resume_queue = lambda q: None  # type: ignore[method-assign]
    with Served(create_dashboard(app, token=TOKEN, max_auth_failures=10**6)) as served, \
            served.client() as c:
        login(c)
        csrf = csrf_of(c)

        @settings(max_examples=250, deadline=None)
        @given(route=st.sampled_from(ROUTES), post=st.booleans(),
               query=st.lists(st.tuples(st.binary(max_size=12), st.binary(max_size=40)),
                              max_size=4),
               form=st.dictionaries(st.sampled_from(["q", "ids", "action", "token", "csrf",
                                                     "state", "queue", "name", "cron", "task",
                                                     "args", "tz", "error", "created_from",
                                                     "finished_to", "id", "unique_key",
                                                     "sort", "after", "priority",
                                                     "run_at", "from_step"])
                                    | st.text(max_size=8),
                                    st.text(max_size=40), max_size=4),
               keep_csrf=st.booleans(), raw=st.none() | st.binary(max_size=300))
        def probe(route: str, post: bool, query: list[tuple[bytes, bytes]],
                  form: dict[str, str], keep_csrf: bool, raw: bytes | None) -> None:
            qs = "&".join(f"{quote_from_bytes(k)}={quote_from_bytes(v)}" for k, v in query)
            url = f"{route}?{qs}" if qs else route
            if not post:
                response = c.get(url)
            elif raw is not None:
                response = c.post(url, content=raw, headers={
                    "Content-Type": "application/x-www-form-urlencoded"})
            else:
                response = c.post(url, data={**form, **({"csrf": csrf} if keep_csrf else {})})
            healthy = route == "/health" and response.status_code == 503  # no worker: by design
            assert response.status_code < 500 or healthy, (url, response.status_code,
                                                           response.text)

        probe()


def test_the_history_charts_are_behind_the_gate_and_escape_names(app: App) -> None:
    """The history chart pages (issue 29): no page nor live refresh without a login, no
    POST at all, and a stored name shown as text, its links one path segment each."""
    from shiftwork.model.records import HistoryBucket

    hostile = '"><script>alert(1)</script>/../x'
    app.store.observe.history_add([HistoryBucket("", hostile, app.clock.now(), 1, 1, 0, 0, 1,
                                         0.1, 0.2, 3.0)])
    path = "/history/tasks/" + quote(hostile, safe="")
    with Served(create_dashboard(app, token=TOKEN)) as served, served.client() as c:
        for url in (path, path + "?live=1", "/history/queues/emails"):
            assert c.get(url).status_code == 401, url
        login(c)
        assert c.post(path, data={"csrf": csrf_of(c)}).status_code == 405
        page = c.get(path).text
        assert "<script>alert" not in page and "&lt;script&gt;" in page
        assert f'data-live="{path}?live=1"' in page
