"""Prometheus exposition, structured logs and trace propagation."""

from __future__ import annotations

import json
import logging
import urllib.request
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from shiftwork import App, Backoff, FakeClock, JobState
from shiftwork.observe.logging import JsonFormatter
from shiftwork.observe.metrics import Metrics
from shiftwork.observe.worker import MetricsServer

from .conftest import running_worker, wait_for

FAST_RETRY = Backoff(initial=0.01, maximum=0.02, jitter=False)


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(found: dict[Any, float], name: str, **labels: str) -> float | None:
    return found.get((name, tuple(sorted(labels.items()))))


def test_exposition_after_a_known_set_of_jobs(app: App) -> None:
    @app.task(name="ok", queue="work")
    def ok(n: int) -> int:
        return n

    @app.task(name="flaky", queue="work", max_attempts=2, retry=FAST_RETRY)
    def flaky() -> None:
        raise RuntimeError("always")

    @app.task(name="doomed", queue="work", max_attempts=1)
    def doomed() -> None:
        raise ValueError("at once")

    app.queue("work", max_wait=120)
    ids = [ok.enqueue(i).id for i in range(3)] + [flaky.enqueue().id, doomed.enqueue().id]
    with running_worker(app, {"work": 4}, metrics_port=0) as worker:
        server = next(s for s in worker.services if isinstance(s, MetricsServer))
        wait_for(lambda: all(app.get_job(i).state in (JobState.SUCCEEDED, JobState.DEAD)
                             for i in ids), what="all jobs final")
        wait_for(lambda: b'shiftwork_jobs_dead_total{queue="work",task="doomed"} 1.0'
                 in server.metrics.exposition(), what="events counted")
        url = f"http://127.0.0.1:{server.port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            assert response.headers["Content-Type"].startswith("text/plain")
            found = samples(response.read().decode())

    assert value(found, "shiftwork_jobs_succeeded_total", task="ok", queue="work") == 3
    assert value(found, "shiftwork_jobs_failed_total", task="flaky", queue="work") == 2
    assert value(found, "shiftwork_jobs_retried_total", task="flaky", queue="work") == 1
    assert value(found, "shiftwork_jobs_dead_total", task="flaky", queue="work") == 1
    assert value(found, "shiftwork_jobs_dead_total", task="doomed", queue="work") == 1
    assert value(found, "shiftwork_jobs_failed_total", task="doomed", queue="work") == 1
    assert value(found, "shiftwork_jobs_succeeded_total", task="flaky", queue="work") is None
    assert value(found, "shiftwork_job_duration_seconds_count", task="ok", queue="work") == 3
    assert value(found, "shiftwork_job_duration_seconds_count", task="flaky", queue="work") == 2
    # Queue gauges come from the database.
    assert value(found, "shiftwork_queue_dead", queue="work") == 2
    assert value(found, "shiftwork_queue_waiting", queue="work") == 0
    assert value(found, "shiftwork_queue_running", queue="work") == 0
    assert value(found, "shiftwork_queue_oldest_waiting_age_seconds", queue="work") == 0
    assert value(found, "shiftwork_queue_max_wait_seconds", queue="work") == 120
    assert value(found, "shiftwork_database_up") == 1
    assert value(found, "shiftwork_workers_alive") == 1
    assert value(found, "shiftwork_worker_up", worker=worker.id) == 1
    assert value(found, "shiftwork_worker_jobs_in_flight", worker=worker.id) == 0
    assert value(found, "shiftwork_worker_last_heartbeat_timestamp_seconds",
                 worker=worker.id) is not None
    # The throughput recorder wrote per-minute counts on the way out.
    minutes = app.store.observe.queue_minutes_list(app.store.db_now().replace(year=2000))
    assert sum(m.succeeded for m in minutes) == 3
    assert sum(m.dead for m in minutes) == 2
    assert sum(m.retried for m in minutes) == 1


def test_a_lease_expiry_death_counts_with_its_task(app: App) -> None:
    """A job whose worker vanished on its last attempt is dead for its task's counters too."""
    @app.task(name="orphan", queue="work", max_attempts=1)
    def orphan() -> None: ...

    job = orphan.enqueue()
    # a worker that claims it and is never heard from again
    app.store.jobs.claim("work", 1, "vanished-worker", lease_seconds=0.2)
    with running_worker(app, {"work": 1}, metrics_port=0) as worker:
        server = next(s for s in worker.services if isinstance(s, MetricsServer))
        wait_for(lambda: app.get_job(job.id).state is JobState.DEAD, what="rescued to dead")
        wait_for(lambda: b'shiftwork_jobs_dead_total{queue="work",task="orphan"} 1.0'
                 in server.metrics.exposition(), what="the death counted for its task")
        found = samples(server.metrics.exposition().decode())
    assert value(found, "shiftwork_jobs_rescued_total", state="dead") == 1


def test_oldest_waiting_age_grows_while_a_queue_is_stalled(make_app: Any) -> None:
    clock = FakeClock()
    app = make_app(clock=clock)

    @app.task(queue="stalled")
    def job() -> None: ...

    metrics = Metrics(app)
    age = "shiftwork_queue_oldest_waiting_age_seconds"
    assert value(samples(metrics.exposition().decode()), age, queue="stalled") == 0
    job.enqueue()
    assert value(samples(metrics.exposition().decode()), age, queue="stalled") == 0
    clock.advance(30)
    job.enqueue()  # a younger job does not lower the age
    assert value(samples(metrics.exposition().decode()), age, queue="stalled") == 30
    clock.advance(90)
    found = samples(metrics.exposition().decode())
    assert value(found, age, queue="stalled") == 120
    assert value(found, "shiftwork_queue_waiting", queue="stalled") == 2
    assert value(found, "shiftwork_workers_alive") == 0
    metrics.close()


def test_scheduled_jobs_are_not_waiting(make_app: Any) -> None:
    clock = FakeClock()
    app = make_app(clock=clock)

    @app.task(queue="later")
    def job() -> None: ...

    job.using(delay=60).enqueue()
    metrics = Metrics(app)
    found = samples(metrics.exposition().decode())
    assert value(found, "shiftwork_queue_scheduled", queue="later") == 1
    assert value(found, "shiftwork_queue_waiting", queue="later") == 0
    clock.advance(75)
    found = samples(metrics.exposition().decode())
    assert value(found, "shiftwork_queue_waiting", queue="later") == 1
    assert value(found, "shiftwork_queue_oldest_waiting_age_seconds", queue="later") == 15


def test_schedule_metrics_come_from_the_plugged_source(app: App) -> None:
    from datetime import UTC, datetime

    from shiftwork.observe import ScheduleStatus

    class Source:
        def schedules_status(self) -> list[ScheduleStatus]:
            return [ScheduleStatus("nightly", last_success_at=datetime(2030, 1, 1, tzinfo=UTC),
                                   late=True, reason="missed 02:00")]

    metrics = Metrics(app)
    assert b"shiftwork_schedule_late" not in metrics.exposition()
    app.observers.schedules = Source()
    found = samples(metrics.exposition().decode())
    assert value(found, "shiftwork_schedule_late", schedule="nightly") == 1
    assert value(found, "shiftwork_schedule_last_success_timestamp_seconds",
                 schedule="nightly") == datetime(2030, 1, 1, tzinfo=UTC).timestamp()


def test_json_log_lines_carry_the_job_event_fields(app: App) -> None:
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    logger = logging.getLogger("shiftwork.events")
    handler = Keep()
    logger.addHandler(handler)
    old = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        app.events.emit("job.succeeded", job_id=7, task="t", queue="q", attempt=1, duration=0.25)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)
    line = json.loads(JsonFormatter().format(records[0]))
    assert line["event"] == "job.succeeded"
    assert (line["job_id"], line["task"], line["queue"], line["attempt"], line["duration"]) == \
        (7, "t", "q", 1, 0.25)
    assert line["level"] == "debug" and line["logger"] == "shiftwork.events"


@pytest.fixture(scope="module")
def span_exporter() -> Any:
    sdk = pytest.importorskip("opentelemetry.sdk.trace")
    export = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")
    from opentelemetry import trace
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.util._once import Once

    provider = sdk.TracerProvider()
    exporter = export.InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)  # once per process; later calls are ignored
    if trace.get_tracer_provider() is not provider:
        pytest.skip("another tracer provider is already installed")
    yield exporter
    # Installed, it stays for the process: every later test's jobs would carry a trace
    # context in their meta. The API has no way to remove a provider, so its globals are
    # put back as they were (the way OpenTelemetry's own tests reset them).
    provider.shutdown()
    trace._TRACER_PROVIDER = None
    trace._TRACER_PROVIDER_SET_ONCE = Once()


def test_trace_context_travels_from_enqueue_into_the_job(app: App, span_exporter: Any) -> None:
    from opentelemetry import trace

    span_exporter.clear()
    seen: dict[str, Any] = {}

    @app.task(name="traced", queue="default")
    def traced() -> None:
        seen["trace_id"] = trace.get_current_span().get_span_context().trace_id

    with trace.get_tracer("test").start_as_current_span("http request") as request:
        job_id = traced.enqueue().id
    assert "traceparent" in app.get_job(job_id).meta["otel"]
    with running_worker(app):
        wait_for(lambda: app.get_job(job_id).state is JobState.SUCCEEDED, what="job done")
    assert seen["trace_id"] == request.get_span_context().trace_id
    spans = {s.name: s for s in span_exporter.get_finished_spans()}
    run, enqueue = spans["shiftwork run traced"], spans["shiftwork enqueue traced"]
    assert run.parent is not None and run.parent.span_id == enqueue.context.span_id
    assert enqueue.parent is not None
    assert enqueue.parent.span_id == request.get_span_context().span_id


def test_a_fired_occurrence_is_enqueued_through_the_same_path(app: App,
                                                               span_exporter: Any) -> None:
    """A schedule's job goes in through the App's insert: it gets the enqueue span and
    carries its context into the run, as any other enqueue."""

    @app.task(name="scheduled_traced")
    def scheduled_traced() -> None: ...

    app.schedule("hourly", "0 * * * *", scheduled_traced)
    from shiftwork.schedules.scheduler import reconcile

    reconcile(app.runtime)
    span_exporter.clear()
    job_id = app.schedules.trigger("hourly")
    assert "traceparent" in app.get_job(job_id).meta["otel"]
    assert "shiftwork enqueue scheduled_traced" in {
        s.name for s in span_exporter.get_finished_spans()}
