"""shiftwork.contrib.sentry: failed jobs reach Sentry with their task, queue, attempt, job id
and tags, every attempt or only the last; the SDK's transport replaced by one that records
the envelopes it is handed (nothing leaves the machine)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from shiftwork import App, Backoff, ConfigurationError, JobState

from .conftest import running_worker, wait_for

sentry_sdk = pytest.importorskip("sentry_sdk")
from sentry_sdk.transport import Transport  # noqa: E402

from shiftwork.contrib.sentry import report_failures  # noqa: E402

FAST_RETRY = Backoff(initial=0.01, maximum=0.02, jitter=False)


class Recording(Transport):
    """Keeps every event the SDK would send."""

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        self.events: list[dict[str, Any]] = []

    def capture_envelope(self, envelope: Any) -> None:
        for item in envelope.items:
            if item.type == "event":
                self.events.append(item.payload.json)


@pytest.fixture
def sent() -> Iterator[list[dict[str, Any]]]:
    transport = Recording()
    # No integrations: they would patch logging, Starlette, SQLAlchemy... for the rest of
    # this test process.
    sentry_sdk.init(dsn="https://public@sentry.example.invalid/1", transport=transport,
                    default_integrations=False, auto_enabling_integrations=False)
    try:
        yield transport.events
    finally:
        sentry_sdk.get_client().close()
        sentry_sdk.get_global_scope().set_client(None)  # back to the SDK's no-op client
        assert not sentry_sdk.get_client().is_active()


def _declare(app: App) -> Any:
    @app.task(name="billing.charge", queue="payments", max_attempts=2, retry=FAST_RETRY,
              tags=["billing"])
    def charge(customer: int) -> None:
        raise ValueError(f"card declined for customer {customer}")

    return charge


def _run_until_dead(app: App, job_id: int) -> None:
    with running_worker(app, {"payments": 1}):
        wait_for(lambda: app.get_job(job_id).state is JobState.DEAD, what="the job dead")


def test_every_failed_attempt_is_reported_with_its_job(app: App,
                                                       sent: list[dict[str, Any]]) -> None:
    charge = _declare(app)
    reporter = report_failures(app)
    job = charge.using(tags=["customer:42"]).enqueue(42)
    _run_until_dead(app, job.id)
    reporter.close()

    assert [e["tags"]["shiftwork.attempt"] for e in sent] == ["1", "2"]
    assert [e["tags"]["shiftwork.outcome"] for e in sent] == ["failed", "failed"]
    for event in sent:
        assert event["level"] == "error"
        assert {k: v for k, v in event["tags"].items() if k != "shiftwork.attempt"} == {
            "shiftwork.task": "billing.charge", "shiftwork.queue": "payments",
            "shiftwork.job_id": str(job.id), "shiftwork.outcome": "failed",
            "shiftwork.error_kind": "exception", "shiftwork.tags": "billing,customer:42"}
        [exc] = event["exception"]["values"]
        assert (exc["type"], exc["value"]) == ("ValueError", "card declined for customer 42")
        context = event["contexts"]["shiftwork"]
        assert context["job_id"] == job.id and context["tags"] == ["billing", "customer:42"]
        assert "ValueError: card declined" in context["traceback"]
        assert event["fingerprint"] == ["shiftwork", "billing.charge", "ValueError"]


def test_only_the_death_when_asked(app: App, sent: list[dict[str, Any]]) -> None:
    charge = _declare(app)
    reporter = report_failures(app, on="dead")
    job = charge.enqueue(7)
    _run_until_dead(app, job.id)
    reporter.close()

    [event] = sent
    assert event["tags"]["shiftwork.attempt"] == "2"
    assert event["tags"]["shiftwork.outcome"] == "dead"
    assert event["tags"]["shiftwork.tags"] == "billing"
    assert event["exception"]["values"][0]["value"] == "card declined for customer 7"


def test_successes_and_a_closed_reporter_send_nothing(app: App,
                                                      sent: list[dict[str, Any]]) -> None:
    @app.task(name="fine", queue="payments")
    def fine() -> None: ...

    charge = _declare(app)
    reporter = report_failures(app)
    ok = fine.enqueue()
    with running_worker(app, {"payments": 1}):
        wait_for(lambda: app.get_job(ok.id).state is JobState.SUCCEEDED, what="success")
    assert sent == []
    reporter.close()
    _run_until_dead(app, charge.enqueue(1).id)
    assert sent == []


def test_a_lease_that_expired_on_the_last_attempt_is_reported(
        app: App, sent: list[dict[str, Any]]) -> None:
    @app.task(name="lost", queue="payments", max_attempts=1)
    def lost() -> None: ...

    reporter = report_failures(app)
    job = lost.enqueue()
    [claimed] = app.store.jobs.claim("payments", 1, "vanished-worker", 0.2)
    assert claimed.id == job.id
    with running_worker(app, {"other": 1}):  # its rescuer takes the lease back: dead
        wait_for(lambda: app.get_job(job.id).state is JobState.DEAD, what="rescued dead")
        wait_for(lambda: sent, what="the report")
    reporter.close()
    [event] = sent
    assert event["tags"]["shiftwork.outcome"] == "dead"
    assert event["tags"]["shiftwork.job_id"] == str(job.id)
    assert event["tags"]["shiftwork.error_kind"] == "lease_expired"


@pytest.mark.parametrize("on", ["always", "", None, "Dead"])
def test_a_bad_setting_is_refused(app: App, on: Any) -> None:
    with pytest.raises(ConfigurationError, match=r"on=.*must be 'attempt'.*or 'dead'"):
        report_failures(app, on=on)


def test_without_the_sentry_extra_the_error_names_it(app: App,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from shiftwork.contrib import sentry

    monkeypatch.setattr(sentry, "sentry_sdk", None)  # as if not installed
    with pytest.raises(ConfigurationError, match=r"pip install 'shiftwork\[sentry\]'"):
        report_failures(app)
