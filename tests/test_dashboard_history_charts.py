"""Issue 29 (history charts): a queue's and a task's last 24 hours on the dashboard, drawn
from the leader's rollup, on both engines, through a really served dashboard: behind the
login, escaped, one query a page and a live refresh, linked from the queue and job views;
and the same figures from ``shiftwork queues --json``."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from click.testing import CliRunner

from shiftwork import App
from shiftwork.cli import main
from shiftwork.core.clock import FakeClock
from shiftwork.model.records import HistoryBucket
from shiftwork.observe.rollup import BUCKET, GRACE, HistoryRollup
from shiftwork.testing import drain
from shiftwork.web import create_dashboard
from shiftwork.web.dashboard import path_segment

from .conftest import running_worker, wait_for
from .test_security import TOKEN, Served, login

NOW = datetime(2026, 3, 2, 12, 0, 30, tzinfo=UTC)
HOSTILE = "<script>alert(1)</script>"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(NOW)


def _bucket(hours_ago: float) -> datetime:
    at = (NOW - timedelta(hours=hours_ago)).timestamp() // BUCKET * BUCKET
    return datetime.fromtimestamp(at, UTC)


def _seed(app: App) -> None:
    """A day of rollup rows for queue "emails" and task "send", and one stored bad name."""
    rows = []
    for i in range(1, 200):
        start = _bucket(i * BUCKET / 3600)
        rows.append(HistoryBucket("emails", "", start, 10 + i % 7, i % 3, i % 2, 0, 10,
                                  0.05 * (1 + i % 5), 0.9 + i % 4, 2.0 * (i % 9)))
        rows.append(HistoryBucket("", "send", start, 10 + i % 7, i % 3, i % 2, 0, 10,
                                  0.05, 1.5, None))
    rows.append(HistoryBucket("", HOSTILE, _bucket(1), 1, 1, 0, 0, 1, 0.1, 0.1, 1.0))
    app.store.observe.history_add(rows)


def test_a_queue_and_a_task_have_charts_of_their_day(make_app: Callable[..., App],
                                                     clock: FakeClock) -> None:
    app = make_app(clock=clock)
    _seed(app)
    with Served(create_dashboard(app, token=TOKEN)) as served, served.client() as c:
        assert c.get("/history/queues/emails").status_code in (303, 401)  # login first
        login(c)
        page = c.get("/history/queues/emails")
        assert page.status_code == 200
        html = page.text
        for title in ("Throughput", "Failures", "Run time", "Oldest waiting"):
            assert f'data-chart="{title}"' in html
        assert html.count("<svg class=\"chart axes\"") == 4
        assert "jobs finished per 5 minutes" in html and ">now</text>" in html
        assert "ms</text>" in html or "s</text>" in html  # a unit on the time axes
        assert "<rect x=" in html and "<path d=\"M" in html
        assert 'data-live="/history/queues/emails?live=1"' in html
        task = c.get("/history/tasks/send").text
        assert 'data-chart="Run time"' in task and "nothing recorded yet" in task  # no waits
        # A stored name is escaped wherever it shows, and its links stay one segment.
        bad = c.get(f"/history/tasks/{path_segment(HOSTILE)}").text
        assert HOSTILE not in bad and "&lt;script&gt;" in bad
        assert f'data-live="/history/tasks/{path_segment(HOSTILE)}?live=1"' in bad
        assert c.get("/history/workers/x").status_code == 404


def test_one_query_a_page_and_a_refresh(make_app: Callable[..., App],
                                        clock: FakeClock) -> None:
    app = make_app(clock=clock)
    _seed(app)
    calls: list[str] = []
    real = app.store.observe.history_list

    def counted(*a: Any, **k: Any) -> Any:
        calls.append("history_list")
        return real(*a, **k)

    app.store.observe.history_list = counted  # type: ignore[method-assign]
    with Served(create_dashboard(app, token=TOKEN)) as served, served.client() as c:
        login(c)
        calls.clear()
        c.get("/history/queues/emails")
        assert calls == ["history_list"]
        calls.clear()
        live = c.get("/history/queues/emails", params={"live": "1"}).text
        assert calls == ["history_list"] and "<html" not in live
        assert 'data-chart="Throughput"' in live


def test_the_queue_and_job_views_link_to_the_charts(make_app: Callable[..., App],
                                                    clock: FakeClock) -> None:
    app = make_app(clock=clock)

    @app.task(name="mail.send", queue="emails")
    def send() -> None: ...

    job = send.enqueue().id
    drain(app)
    with Served(create_dashboard(app, token=TOKEN)) as served, served.client() as c:
        login(c)
        assert 'href="/history/queues/emails"' in c.get("/").text
        assert 'href="/history/tasks/mail.send"' in c.get(f"/jobs/{job}").text
        queue_page = c.get("/history/queues/emails").text
        assert 'href="/history/tasks/mail.send"' in queue_page  # its tasks
        assert 'href="/history/queues/emails"' in c.get("/history/tasks/mail.send").text


def test_queues_json_prints_the_history(make_app: Callable[..., App], clock: FakeClock,
                                        db: dict[str, str]) -> None:
    app = make_app(clock=clock)

    @app.task(name="mail.send", queue="emails")
    def send() -> None: ...

    send.enqueue()
    with running_worker(app, {"emails": 1}):  # its recorder counts the finished job
        wait_for(lambda: app.list_jobs(state="succeeded"), what="the job done")
    start = datetime.fromtimestamp(clock.now().timestamp() // BUCKET * BUCKET, UTC)
    clock.set(start + timedelta(seconds=BUCKET + GRACE + 1))
    assert HistoryRollup(app.store, clock, app.settings).tick(1) >= 1
    args = ["--dsn", db["dsn"]]
    if not db["dsn"].startswith("sqlite"):
        args += ["--schema", db["schema"]]
    runner = CliRunner()
    # The command reads the real clock: the bucket is 2026's, so look back far enough.
    hours = str((datetime.now(UTC) - start).total_seconds() / 3600 + 1)
    out = runner.invoke(main, ["queues", "--json", "--hours", hours, *args])
    assert out.exit_code == 0, out.output
    (queue,) = json.loads(out.stdout)
    assert queue["queue"] == "emails" and queue["succeeded"] == 1
    # (The worker's own leader wrote the bucket before, with the job waiting in it.)
    (bucket,) = [b for b in queue["history"] if b["bucket"] == start.isoformat()]
    assert (bucket["succeeded"], bucket["failures"], bucket["runs"]) == (1, 0, 1)
    assert bucket["bucket"] == start.isoformat() and bucket["p95_seconds"] is not None
    out = runner.invoke(main, ["queues", "--tasks", "--json", "--hours", hours, *args])
    assert out.exit_code == 0, out.output
    (task,) = json.loads(out.stdout)
    assert (task["task"], task["finished"], task["failures"]) == ("mail.send", 1, 0)
    table = runner.invoke(main, ["queues", "--tasks", "--hours", hours, *args]).output
    assert "mail.send" in table and "worst p95" in table
    table = runner.invoke(main, ["queues", "--hours", hours, *args]).output
    assert "oldest waiting" in table and "5-minute buckets" in table  # both tables
