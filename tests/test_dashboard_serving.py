"""Issue 16, items 9 and 10: a busy port fails before any URL is printed, and /health can
be left open to probes, saying only ok / not ok. Real processes, a real socket."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from starlette.testclient import TestClient

from shiftwork import App
from shiftwork.web import create_dashboard

from .conftest import FAST, ROOT, running_worker

TOKEN = "test-token-0123456789"


def _app(tmp_path: Path) -> App:
    app = App(f"sqlite:///{tmp_path / 'jobs.db'}", settings=FAST)
    app.migrate()
    app.queue("emails", max_wait=60)
    return app


def test_public_health_says_only_ok_or_not_ok(tmp_path: Path) -> None:
    app = _app(tmp_path)
    closed = TestClient(create_dashboard(app, token=TOKEN))
    assert closed.get("/health").status_code == 401
    client = TestClient(create_dashboard(app, token=TOKEN, public_health=True))
    # No worker is alive: not ok, and not a word about why.
    answer = client.get("/health")
    assert (answer.status_code, answer.text) == (503, "not ok\n")
    assert "content-security-policy" in answer.headers
    # With the token, the details.
    detailed = client.get("/health", headers={"Authorization": f"Bearer {TOKEN}"})
    assert detailed.status_code == 503 and "no_worker" in detailed.text
    # Only /health opens: the rest still needs a login.
    assert client.get("/").status_code == 401
    assert client.get("/metrics").status_code == 401
    assert client.get("/health/x").status_code == 401
    with running_worker(app, {"emails": 1}):
        answer = client.get("/health")
    assert (answer.status_code, answer.text) == (200, "ok\n")


def test_detailed_health_lists_warnings_and_stays_200(tmp_path: Path) -> None:
    """A warning (here: the -wal file past a 1-byte threshold) is listed after the
    problems, and leaves the answer 200 as it leaves `shiftwork health` at exit 0."""
    import dataclasses

    app = App(f"sqlite:///{tmp_path / 'jobs.db'}",
              settings=dataclasses.replace(FAST, sqlite_wal_bytes_warning=1))
    app.migrate()
    client = TestClient(create_dashboard(app, token=TOKEN))
    with running_worker(app, {"default": 1}):
        answer = client.get("/health", headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 200, answer.text
    assert answer.text.startswith("warning sqlite_wal"), answer.text


def test_second_dashboard_on_a_busy_port_fails_before_its_url(tmp_path: Path) -> None:
    _app(tmp_path)
    (tmp_path / "dash_app.py").write_text(
        f"from shiftwork import App\napp = App('sqlite:///{tmp_path / 'jobs.db'}')\n")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "shiftwork.cli", "dashboard", "dash_app:app", "--port",
             str(port), "--token-file", str(_token(tmp_path))],
            cwd=tmp_path, capture_output=True, text=True, timeout=60,
            env={**os.environ, "PYTHONPATH": f"{tmp_path}:{ROOT / 'src'}"})
    assert result.returncode == 2, result.stderr
    assert f"cannot serve the dashboard on 127.0.0.1:{port}: Address already in use" \
        in result.stderr
    assert "http://" not in result.stderr + result.stdout


def _token(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text(TOKEN)
    path.chmod(0o600)
    return path


def test_behind_a_proxy_that_strips_a_prefix_root_path_puts_it_back(tmp_path: Path) -> None:
    """`shiftwork dashboard --root-path /ops/jobs`: the proxy passes /login, the page's
    form, links and redirects say /ops/jobs/... (a real uvicorn on a real socket)."""
    import threading
    import time
    import urllib.request

    import uvicorn

    from shiftwork.cli.dashboard import listen_socket
    from shiftwork.web.serve import server_config

    app = _app(tmp_path)
    sock = listen_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    server = uvicorn.Server(server_config(create_dashboard(app, token=TOKEN),
                                          port=port, root_path="ops/jobs/"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/login") as page:
            html = page.read().decode()
        assert 'action="/ops/jobs/login"' in html and 'href="/ops/jobs/static/style.css"' in html
    finally:
        server.should_exit = True
        thread.join(10)
        app.close()
