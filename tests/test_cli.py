"""The `shiftwork` command against a real database."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

from shiftwork import JobState

from .conftest import ROOT, running_worker, wait_for


def cli(db: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'src'}",
           "SHIFTWORK_TEST_DSN": db["dsn"], "SHIFTWORK_TEST_SCHEMA": db["schema"],
           "SHIFTWORK_APP": "tests.apps.cli_app:app", "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "shiftwork.cli", *args], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=60)


def test_migrate_enqueue_inspect_retry_cancel(db: dict[str, str], monkeypatch) -> None:  # type: ignore[no-untyped-def]
    r = cli(db, "migrate")
    assert r.returncode == 0, r.stderr
    assert "applied migrations" in r.stdout
    assert "up to date" in cli(db, "migrate").stdout

    ok = cli(db, "enqueue", "greet", "--args", '["ada"]')
    bad = cli(db, "enqueue", "greet", "--kwargs", '{"name": "fail"}')
    later = cli(db, "enqueue", "greet", "--args", '["bob"]', "--delay", "3600")
    assert ok.returncode == bad.returncode == later.returncode == 0, ok.stderr + bad.stderr
    ids = [int(x.stdout.split()[1]) for x in (ok, bad, later)]

    monkeypatch.setenv("SHIFTWORK_TEST_DSN", db["dsn"])
    monkeypatch.setenv("SHIFTWORK_TEST_SCHEMA", db["schema"])
    import importlib
    sys.modules.pop("tests.apps.cli_app", None)
    app = importlib.import_module("tests.apps.cli_app").app
    try:
        with running_worker(app):
            wait_for(lambda: app.get_job(ids[1]).state is JobState.DEAD)
            wait_for(lambda: app.get_job(ids[0]).state is JobState.SUCCEEDED)
    finally:
        app.close()

    queues = json.loads(cli(db, "queues", "--json").stdout)
    assert [(q["queue"], q["succeeded"], q["dead"], q["scheduled"]) for q in queues] == [
        ("default", 1, 1, 1)]
    table = cli(db, "queues").stdout
    assert "default" in table and "oldest waiting" in table

    dead = json.loads(cli(db, "jobs", "list", "--state", "dead", "--json").stdout)
    assert [j["id"] for j in dead] == [ids[1]]
    shown = cli(db, "jobs", "show", str(ids[1])).stdout
    assert "RuntimeError: cannot greet fail" in shown and "Traceback" in shown

    retried = cli(db, "jobs", "retry", str(ids[1]))
    assert f"job {ids[1]}: available" in retried.stdout
    cancelled = cli(db, "jobs", "cancel", str(ids[2]))
    assert f"job {ids[2]}: cancelled" in cancelled.stdout
    missing = cli(db, "jobs", "show", "999999")
    assert missing.returncode == 2 and "no job with id 999999" in missing.stderr
    twice = cli(db, "jobs", "retry", str(ids[0]))
    assert twice.returncode == 2 and "only dead, cancelled or waiting" in twice.stderr


def test_demo_runs_to_the_end(tmp_path) -> None:  # type: ignore[no-untyped-def]
    r = subprocess.run([sys.executable, "-m", "shiftwork.cli", "demo", "--db",
                        str(tmp_path / "demo.db"), "--jobs", "200"], capture_output=True,
                       text=True, cwd=ROOT, timeout=90,
                       env={**os.environ, "COLUMNS": "120"})
    assert r.returncode == 0, r.stderr
    assert "Where to look next" in r.stdout
    assert "dead" in r.stdout
    # Every task enqueued into the chosen file (the login codes, enqueued one by one through
    # their task, once went to the default file) and all of it ran.
    with sqlite3.connect(tmp_path / "demo.db") as db:
        by_task = dict(db.execute("SELECT task, count(*) FROM jobs GROUP BY task"))
        waiting = db.execute("SELECT count(*) FROM jobs WHERE state IN "
                             "('available', 'running')").fetchone()[0]
    assert by_task["shiftwork.cli.demo_app.send_login_code"] >= 10, by_task
    assert waiting == 0
