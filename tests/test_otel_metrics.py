"""The event metrics through OpenTelemetry: the same instruments, counts and buckets as
the Prometheus exporter, read with the SDK's InMemoryMetricReader."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from shiftwork import App, Backoff, JobState
from shiftwork.observe.metric_defs import DURATION_BUCKETS, EVENT_METRICS
from shiftwork.observe.metrics import Metrics
from shiftwork.observe.otel_metrics import OtelMetrics

from .conftest import running_worker, wait_for

pytest.importorskip("opentelemetry.sdk.metrics")
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

FAST_RETRY = Backoff(initial=0.01, maximum=0.02, jitter=False)


def otel_points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    data = reader.get_metrics_data()
    out: dict[str, list[Any]] = {}
    for resource in data.resource_metrics if data else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                out.setdefault(metric.name, []).extend(metric.data.data_points)
    return out


def prometheus_values(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(metrics.exposition().decode()):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_otel_counts_what_prometheus_counts(app: App) -> None:
    @app.task(name="ok", queue="work")
    def ok(n: int) -> int:
        return n

    @app.task(name="flaky", queue="work", max_attempts=2, retry=FAST_RETRY)
    def flaky() -> None:
        raise RuntimeError("always")

    @app.task(name="counted", queue="work")
    def counted(ctx: Any) -> None:
        ctx.processed(7)

    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    otel = OtelMetrics(app, meter_provider=provider)
    prom = Metrics(app)
    try:
        ids = [ok.enqueue(i).id for i in range(3)] + [flaky.enqueue().id, counted.enqueue().id]
        with running_worker(app, {"work": 4}):
            wait_for(lambda: all(app.get_job(i).state in (JobState.SUCCEEDED, JobState.DEAD)
                                 for i in ids), what="all jobs final")
            wait_for(lambda: sum(p.value for p in otel_points(reader).get(
                "shiftwork_jobs_dead", [])) == 1, what="the death counted")
        points = otel_points(reader)
        found = prometheus_values(prom)
    finally:
        otel.close()
        prom.close()
        provider.shutdown()

    # Every counter point is the Prometheus series of the same name and labels.
    compared = 0
    for d in EVENT_METRICS:
        for point in points.get(d.name, []):
            labels = tuple(sorted((k, str(v)) for k, v in point.attributes.items()))
            assert set(point.attributes) == set(d.labels), d.name
            if d.kind == "counter":
                assert found[(d.exposed, labels)] == point.value, (d.name, labels)
            else:
                assert found[(d.name + "_count", labels)] == point.count
                assert tuple(point.explicit_bounds) == tuple(float(b) for b in DURATION_BUCKETS)
            compared += 1
    assert compared >= 6
    by_task = {(d.name, p.attributes["task"]): p for d in EVENT_METRICS
               for p in points.get(d.name, []) if "task" in p.attributes}
    assert by_task[("shiftwork_jobs_succeeded", "ok")].value == 3
    assert by_task[("shiftwork_jobs_failed", "flaky")].value == 2
    assert by_task[("shiftwork_jobs_retried", "flaky")].value == 1
    assert by_task[("shiftwork_jobs_dead", "flaky")].value == 1
    assert by_task[("shiftwork_items_processed", "counted")].value == 7
    assert by_task[("shiftwork_job_duration_seconds", "ok")].count == 3
    assert by_task[("shiftwork_jobs_succeeded", "ok")].attributes["queue"] == "work"


def test_otel_metrics_stop_counting_once_closed(app: App) -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    otel = OtelMetrics(app, meter_provider=provider)
    app.events.emit("job.succeeded", job_id=1, task="t", queue="q", attempt=1, duration=0.1)
    otel.close()
    app.events.emit("job.succeeded", job_id=2, task="t", queue="q", attempt=1, duration=0.1)
    [point] = otel_points(reader)["shiftwork_jobs_succeeded"]
    assert point.value == 1 and dict(point.attributes) == {"task": "t", "queue": "q"}
    provider.shutdown()


def test_without_the_otel_extra_the_error_names_it(app: App,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from shiftwork.core.errors import ConfigurationError
    from shiftwork.observe import otel_metrics

    monkeypatch.setattr(otel_metrics, "otel_metrics", None)  # as if not installed
    with pytest.raises(ConfigurationError, match=r"pip install 'shiftwork\[otel\]'"):
        OtelMetrics(app)
