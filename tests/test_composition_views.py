"""What people see of composition: `shiftwork jobs show` (dependencies and dependents),
`shiftwork groups show`, and the dashboard's job and group pages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from .conftest import ROOT, imported_app, running_worker


@pytest.fixture
def comp(db: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Any:
    with imported_app(monkeypatch, "composed", db["dsn"], db["schema"]) as module:
        module.create_effects_table()
        yield module


def cli(db: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'src'}",
           "SHIFTWORK_TEST_DSN": db["dsn"], "SHIFTWORK_TEST_SCHEMA": db["schema"],
           "SHIFTWORK_APP": "tests.apps.composed:app", "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "shiftwork.cli", *args], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=60)


def test_command_line_shows_dependencies_and_groups(comp: Any, db: dict[str, str]) -> None:
    g = comp.app.group(comp.member.call(i) for i in range(3))
    cb = g.then(comp.callback.call("x"))
    after = comp.member.using(after=[cb], on_failure="run").enqueue(9)
    with running_worker(comp.app, {"work": 2}):
        cb.result(timeout=30)
        after.result(timeout=30)
    shown = cli(db, "jobs", "show", str(cb.id))
    assert shown.returncode == 0, shown.stderr
    member = "tests.apps.composed.member"
    # a callback waits for its group (one dependency), not for an edge per member
    assert "runs after:" not in shown.stdout
    assert f"run after it: {after.id} {member} succeeded (run anyway)" in shown.stdout
    assert f"callback of group {g.id}: runs after all its members" in shown.stdout
    as_json = json.loads(cli(db, "jobs", "show", str(cb.id), "--json").stdout)
    assert as_json["dependencies"] == []
    assert as_json["dependents"][0]["on_failure"] == "run"
    assert as_json["callback_of_group"] == g.id
    member_shown = cli(db, "jobs", "show", str(g.jobs[1].id))
    assert f"member of group {g.id}" in member_shown.stdout
    group = cli(db, "groups", "show", str(g.id))
    assert group.returncode == 0, group.stderr
    assert "3 done, 0 failed, 3 total" in group.stdout
    assert f"callback: job {cb.id}" in group.stdout
    data = json.loads(cli(db, "groups", "show", str(g.id), "--json").stdout)
    assert (data["done"], data["total"], data["members"]) == (3, 3, [j.id for j in g.jobs])
    missing = cli(db, "groups", "show", "424242")
    assert missing.returncode == 2 and "no group with id 424242" in missing.stderr


def test_dashboard_shows_group_progress_and_dependencies(comp: Any) -> None:
    from starlette.testclient import TestClient

    from shiftwork.web.dashboard import create_dashboard

    app = comp.app
    g = app.group(comp.member.call(i) for i in range(2))
    cb = g.then(comp.callback.call("x"))
    client = TestClient(create_dashboard(app, authenticate=lambda r: True),
                        base_url="http://127.0.0.1")
    page = client.get(f"/groups/{g.id}")
    assert page.status_code == 200
    assert "0 done · 0 failed · 2 total" in page.text and f'href="/jobs/{cb.id}"' in page.text
    job = client.get(f"/jobs/{cb.id}")
    assert "callback of" in job.text and f'href="/groups/{g.id}"' in job.text
    member = client.get(f"/jobs/{g.jobs[1].id}")
    assert f'href="/groups/{g.id}"' in member.text
    with running_worker(app, {"work": 2}):
        cb.result(timeout=30)
    assert "2 done · 0 failed · 2 total" in client.get(f"/groups/{g.id}").text
    assert client.get("/groups/999999").status_code == 404
