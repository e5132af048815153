"""A paused queue shows as paused in every view: dashboard, metrics, health, `top`.

Every view reads ``App.queue_stats()`` (the one source with the paused flag), so each
test pauses a queue in the real database and reads the view back.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from click.testing import CliRunner

from shiftwork import App

TOKEN = "test-token-0123456789"


@pytest.fixture
def paused_app(make_app: Any) -> App:
    app = make_app()

    @app.task(queue="backfill")
    def walk(n: int) -> None: ...

    @app.task(queue="emails")
    def mail(to: str) -> None: ...

    walk.enqueue(1)
    mail.enqueue("a@example.com")
    app.pause_queue("backfill")
    app.pause_queue("idle")  # paused before it ever had a job
    app.store.fleet.workers_upsert("w1", "host", 1, {"emails": 1})
    return app


def test_dashboard_tags_a_paused_queue_and_offers_resume(paused_app: App) -> None:
    from starlette.testclient import TestClient

    from shiftwork.web import create_dashboard

    client = TestClient(create_dashboard(paused_app, token=TOKEN), base_url="http://127.0.0.1")
    page = client.get("/", headers={"Authorization": f"Bearer {TOKEN}"})
    assert page.status_code == 200
    rows = dict(re.findall(r'<tr data-queue="([^"]+)".*?>(.*?)</tr>', page.text, re.S))
    assert set(rows) >= {"backfill", "emails", "idle"}
    for queue in ("backfill", "idle"):
        assert 'class="tag paused"' in rows[queue]
        assert f"/queues/{queue}/resume" in rows[queue]
        assert f"/queues/{queue}/pause" not in rows[queue]
    assert 'class="tag paused"' not in rows["emails"]
    assert "/queues/emails/pause" in rows["emails"]


def test_metric_reads_one_for_a_paused_queue(paused_app: App) -> None:
    from shiftwork.observe.metrics import Metrics

    text = Metrics(paused_app).exposition().decode()
    values = dict(re.findall(r'^shiftwork_queue_paused\{queue="([^"]+)"\} (\S+)$', text, re.M))
    assert values == {"backfill": "1.0", "emails": "0.0", "idle": "1.0"}


def test_health_line_names_paused_queues(paused_app: App) -> None:
    from shiftwork.cli import main
    from shiftwork.observe import check_health

    report = check_health(paused_app)
    assert report.ok
    assert {s.queue for s in report.queues if s.paused} == {"backfill", "idle"}
    dsn, schema = paused_app.dsn, paused_app.schema
    runner = CliRunner()
    out = runner.invoke(main, ["health", "--dsn", dsn, "--schema", schema])
    assert out.exit_code == 0, out.output
    assert "(paused: backfill, idle)" in out.output
    as_json = runner.invoke(main, ["health", "--json", "--dsn", dsn, "--schema", schema])
    paused = {q["queue"]: q["paused"] for q in json.loads(as_json.stdout)["queues"]}
    assert paused == {"backfill": True, "emails": False, "idle": True}


def test_top_marks_a_paused_queue(paused_app: App) -> None:
    from rich.console import Console

    from shiftwork.observe.top import render
    from shiftwork.observe.views import overview

    console = Console(record=True, width=200)
    console.print(render(overview(paused_app)))
    lines = console.export_text().splitlines()
    assert any("backfill (paused)" in line for line in lines)
    assert any("idle (paused)" in line for line in lines)
    assert not any("emails (paused)" in line for line in lines)
