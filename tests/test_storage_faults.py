"""Faults at the storage seam, on both engines: the recovery paths a healthy run never takes.

A ``FaultyStore`` (tests/faults/faulty_store.py) makes chosen store calls fail, before
reaching the database or after committing (a lost reply). Real workers, real databases.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Callable

import pytest

from shiftwork import App, JobContext, JobState

from .conftest import FAST, running_worker, wait_for
from .faults.faulty_store import inject_faults
from .test_lost_replies import Recorder, _all_succeeded

pytestmark = pytest.mark.fault


def _jobs(app: App, rec: Recorder, n: int = 5) -> list[int]:
    @app.task
    def work(ctx: JobContext) -> int:
        rec.ran(ctx)
        return ctx.job_id

    return [work.enqueue().id for _ in range(n)]


def _ran_once_each(rec: Recorder, ids: list[int]) -> bool:
    return Counter(job_id for job_id, _, _ in rec.runs) == Counter(ids)


def test_the_completer_retries_a_failed_write_and_reports_each_job_once(app: App) -> None:
    rec = Recorder(app)
    ids = _jobs(app, rec)
    plan = inject_faults(app).fail("jobs.complete_many", times=2)
    with running_worker(app) as worker:
        wait_for(lambda: _all_succeeded(app, ids), what="every job succeeded")
        assert worker.completer.flush(10)
    assert plan.raised == 2
    assert Counter(f["job_id"] for f in rec.named("job.succeeded")) == Counter(ids)
    assert not rec.named("job.stale_write")
    assert _ran_once_each(rec, ids)


def test_a_completion_that_committed_before_its_error_is_not_a_stale_write(app: App) -> None:
    rec = Recorder(app)
    ids = _jobs(app, rec)
    plan = inject_faults(app).lose_reply("jobs.complete_many")
    with running_worker(app) as worker:
        wait_for(lambda: _all_succeeded(app, ids), what="every job succeeded")
        wait_for(lambda: len(rec.named("job.succeeded")) == len(ids), what="events")
        assert worker.completer.flush(10)
    assert plan.raised == 1
    assert not rec.named("job.stale_write")
    assert Counter(f["job_id"] for f in rec.named("job.succeeded")) == Counter(ids)


def test_failed_claims_lose_nothing(app: App) -> None:
    rec = Recorder(app)
    ids = _jobs(app, rec)
    plan = inject_faults(app).fail("jobs.claim", times=3)
    with running_worker(app):
        wait_for(lambda: _all_succeeded(app, ids), what="every job succeeded")
    assert plan.raised == 3
    assert _ran_once_each(rec, ids)
    assert not rec.named("job.released")  # nothing was taken, so nothing to give back


def test_a_claim_whose_reply_was_lost_gives_its_jobs_back(app: App) -> None:
    rec = Recorder(app)
    ids = _jobs(app, rec)
    plan = inject_faults(app).lose_reply("jobs.claim")
    started = time.monotonic()
    with running_worker(app):
        wait_for(lambda: _all_succeeded(app, ids), what="every job succeeded")
    took = time.monotonic() - started
    assert plan.raised == 1
    released = {f["job_id"] for f in rec.named("job.released")}
    assert released and released <= set(ids)
    assert took < FAST.lease_seconds + 5  # given back by the producer, no lease to wait out
    assert _ran_once_each(rec, ids)
    for job_id in released:
        assert app.get_job(job_id).errors[-1]["kind"] == "released"


def test_a_failed_heartbeat_does_not_cost_a_running_job_its_lease(app: App) -> None:
    rec = Recorder(app)

    @app.task
    def slow(ctx: JobContext) -> None:
        rec.ran(ctx)
        time.sleep(FAST.lease_seconds * 2)

    job = slow.enqueue()
    faulty = inject_faults(app)
    with running_worker(app):
        wait_for(lambda: rec.runs, what="the job began")
        plan = faulty.fail("jobs.heartbeat")
        wait_for(lambda: app.get_job(job.id).state is JobState.SUCCEEDED, what="succeeded")
    assert plan.raised == 1
    assert rec.runs == [(job.id, 1, "run")]
    assert not rec.named("job.rescued")


@pytest.mark.parametrize("engine", ["postgres"], indirect=True)
def test_the_notifier_keeps_trying_to_listen_and_then_wakes_workers(
        make_app: Callable[..., App], engine: str) -> None:
    # Polling so slow that only a wake-up can explain a prompt pickup.
    app = make_app(settings=dataclasses.replace(FAST, poll_interval=60))
    rec = Recorder(app)

    @app.task
    def work(ctx: JobContext) -> None:
        rec.ran(ctx)

    plan = inject_faults(app).fail("wakeups_listen", times=2)
    with running_worker(app):
        wait_for(lambda: plan.calls >= 3, what="the listener connected on its third try")
        time.sleep(0.5)  # LISTEN issued
        sent = time.monotonic()
        job = work.enqueue()
        wait_for(lambda: app.get_job(job.id).state is JobState.SUCCEEDED, timeout=10,
                 what="the job picked up by a wake-up")
        assert time.monotonic() - sent < 5
    assert plan.raised == 2
