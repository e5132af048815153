"""docs/deploy.md's autoscaling recipes: the KEDA ScaledObject's PostgreSQL queries, run on
a real PostgreSQL, return what the page says and what the metrics report."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
import yaml

from shiftwork import App, JobState
from shiftwork.testing import drain

from .conftest import PG_DSN, ROOT, apps_on

DEPLOY = ROOT / "docs" / "deploy.md"


def _manifests() -> list[dict[str, Any]]:
    blocks = re.findall(r"```yaml\n(.*?)```", DEPLOY.read_text(), re.S)
    return [doc for doc in map(yaml.safe_load, blocks) if isinstance(doc, dict)]


def _scaled_object() -> dict[str, Any]:
    [found] = [m for m in _manifests() if m.get("kind") == "ScaledObject"]
    return found


@pytest.fixture
def schema(pg_schema: str) -> str:
    return pg_schema


@pytest.fixture
def app(schema: str) -> Iterator[App]:
    with apps_on(PG_DSN, schema) as make:
        yield make()


def _run(query: str, schema: str) -> float:
    # The page's queries name the default schema; this test's app has one of its own.
    assert "FROM shiftwork.jobs" in query
    with psycopg.connect(PG_DSN) as conn:
        row = conn.execute(query.replace("shiftwork.jobs", f'"{schema}".jobs')).fetchone()
    assert row is not None
    return float(row[0])


def test_the_keda_queries_return_what_the_docs_say(app: App, schema: str) -> None:
    @app.task(name="send", queue="emails")
    def send(n: int) -> None: ...

    @app.task(name="report", queue="reports")
    def report() -> None: ...

    @app.task(name="doomed", queue="emails", max_attempts=1)
    def doomed() -> None:
        raise RuntimeError("dies")

    dead = doomed.enqueue()
    drain(app, queues=["emails"])                  # a dead email does not wait
    assert app.get_job(dead.id).state is JobState.DEAD
    for i in range(3):
        send.enqueue(i)
    send.using(run_at=datetime.now(UTC) - timedelta(seconds=120)).enqueue(3)
    send.using(delay=3600).enqueue(4)              # scheduled for later: not waiting yet
    report.using(run_at=datetime.now(UTC) - timedelta(hours=2)).enqueue()  # another queue

    triggers = _scaled_object()["spec"]["triggers"]
    assert [t["type"] for t in triggers] == ["postgresql", "postgresql"]
    waiting, age = (_run(t["metadata"]["query"], schema) for t in triggers)
    assert waiting == 4
    assert 119 <= age <= 130
    # The same figures as the metrics' (shiftwork_queue_waiting, ..._oldest_waiting_age).
    [stats] = [s for s in app.queue_stats(include_finished=False) if s.queue == "emails"]
    assert stats.available == waiting
    assert stats.oldest_waiting_age is not None and abs(stats.oldest_waiting_age - age) < 5


def test_the_keda_queries_read_zero_on_an_empty_queue(app: App, schema: str) -> None:
    triggers = _scaled_object()["spec"]["triggers"]
    assert [_run(t["metadata"]["query"], schema) for t in triggers] == [0, 0]


def test_the_hpa_scales_on_an_exported_metric() -> None:
    from shiftwork.observe.metric_defs import ALL_METRICS

    [hpa] = [m for m in _manifests() if m.get("kind") == "HorizontalPodAutoscaler"]
    [metric] = hpa["spec"]["metrics"]
    name = metric["external"]["metric"]["name"]
    [d] = [d for d in ALL_METRICS if d.exposed == name]
    assert set(metric["external"]["metric"]["selector"]["matchLabels"]) <= set(d.labels)
