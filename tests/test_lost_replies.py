"""Lost replies on PostgreSQL: each statement's reply swallowed after the server committed.

A fault proxy (tests/faults/pgproxy.py) sits between a real worker and the real server.
For claim, completion, heartbeat, checkpoint, schedule firing, a workflow step and an
enqueue, the reply of one such statement is dropped and the connection cut, and each
test checks that no job is lost, none stays ``running``, none runs twice unfenced, and
the log and events stay true (no ``job.stale_write`` for a write that landed).
"""

from __future__ import annotations

import dataclasses
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from shiftwork import App, CommitUnknownError, JobContext, JobState, Workflow
from shiftwork.schedules.stored import schedules_of

from .conftest import FAST, PG_DSN, apps_on, require_pg, running_worker, wait_for
from .faults.pgproxy import PgFaultProxy

pytestmark = [pytest.mark.fault, pytest.mark.postgres]

# The plain claim is a function (migration 0016); the others are statements.
CLAIM = r"\.claim_jobs\(|SET state = 'running', attempt = j\.attempt \+ 1"
COMPLETE = r"finished_at = CASE WHEN u\.state IN"
HEARTBEAT = r"SET heartbeat_at"
CHECKPOINT = r"SET checkpoint = CASE WHEN"
SCHEDULE_FIRE = r"INSERT INTO \S+\.schedule_runs"
WORKFLOW_STEP = r"INSERT INTO \S+\.workflow_steps"
ENQUEUE = r"INSERT INTO \S+\.jobs"


class Recorder:
    """What tasks did (job id, attempt, what) and which events were emitted."""

    def __init__(self, app: App) -> None:
        self.runs: list[tuple[int, int, str]] = []
        self.events: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        app.events.subscribe(self._on_event)

    def ran(self, ctx: JobContext, what: str = "run") -> None:
        with self._lock:
            self.runs.append((ctx.job_id, ctx.attempt, what))

    def _on_event(self, name: str, fields: dict[str, Any]) -> None:
        with self._lock:
            self.events.append((name, dict(fields)))

    def named(self, name: str) -> list[dict[str, Any]]:
        with self._lock:
            return [f for n, f in self.events if n == name]


@pytest.fixture
def proxy() -> Iterator[PgFaultProxy]:
    require_pg()
    p = PgFaultProxy()
    yield p
    p.close()


@pytest.fixture
def proxied(proxy: PgFaultProxy) -> Iterator[Callable[..., App]]:
    """Apps whose every connection goes through the proxy, on a fresh schema."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with apps_on(proxy.dsn(), schema) as make:
        yield make
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _states(app: App, ids: list[int]) -> Counter[str]:
    return Counter(app.get_job(i).state.value for i in ids)


def _all_succeeded(app: App, ids: list[int]) -> bool:
    return _states(app, ids) == Counter({"succeeded": len(ids)})


def test_a_lost_claim_reply_gives_the_jobs_back_at_once(
        proxy: PgFaultProxy, proxied: Callable[..., App]) -> None:
    app = proxied()
    rec = Recorder(app)

    @app.task
    def work(ctx: JobContext) -> None:
        rec.ran(ctx)

    ids = [work.enqueue().id for _ in range(5)]
    fault = proxy.drop_reply(CLAIM)
    started = time.monotonic()
    with running_worker(app):
        wait_for(lambda: _all_succeeded(app, ids), what="every job succeeded")
        took = time.monotonic() - started
    assert fault.fired == 1
    released = rec.named("job.released")
    assert released, "the claim whose reply was lost took jobs, and they were given back"
    # Given back at once (well within one lease), each job ran exactly once, and the
    # attempt the lost claim took is not counted against the job.
    assert took < FAST.lease_seconds + 5
    assert Counter(job_id for job_id, _, _ in rec.runs) == Counter(ids)
    for f in released:
        job = app.get_job(f["job_id"])
        assert job.errors[-1]["kind"] == "released"
        assert job.max_attempts == work.options.max_attempts
        assert (job.uncounted, job.counted_attempt) == (1, 1)  # released run not counted
    assert not rec.named("job.stale_write")


def test_a_job_the_worker_does_not_know_is_not_renewed_and_comes_back(
        proxied: Callable[..., App]) -> None:
    """The other half of the design: a claim that commits after the worker gave up on it
    (too late for the give-back) is not renewed by the heartbeat; the rescuer takes it."""
    app = proxied()
    rec = Recorder(app)

    @app.task
    def work(ctx: JobContext) -> None:
        rec.ran(ctx)

    job = work.enqueue()
    with running_worker(app, {"other": 1}) as worker:
        # A ghost claim under the live worker's id, for a queue it does not even serve.
        [ghost] = app.store.jobs.claim("default", 1, worker.id, FAST.lease_seconds)
        assert ghost.id == job.id
        started = time.monotonic()
        wait_for(lambda: app.get_job(job.id).state is JobState.AVAILABLE, timeout=10,
                 what="the unknown job rescued")
        back_after = time.monotonic() - started
    most = FAST.lease_seconds + 2 * FAST.rescue_interval + 1
    assert FAST.lease_seconds * 0.9 <= back_after < most
    assert app.get_job(job.id).errors[-1]["kind"] == "lease_expired"


def test_a_lost_completion_reply_is_a_success_not_a_stale_write(
        proxy: PgFaultProxy, proxied: Callable[..., App]) -> None:
    app = proxied()
    rec = Recorder(app)

    @app.task
    def work(ctx: JobContext) -> int:
        rec.ran(ctx)
        return ctx.job_id

    ids = [work.enqueue().id for _ in range(5)]
    fault = proxy.drop_reply(COMPLETE)
    with running_worker(app):
        wait_for(lambda: _all_succeeded(app, ids), what="every job succeeded")
        wait_for(lambda: len(rec.named("job.succeeded")) >= len(ids), what="events")
    assert fault.fired == 1
    assert not rec.named("job.stale_write")
    assert Counter(f["job_id"] for f in rec.named("job.succeeded")) == Counter(ids)
    assert Counter(job_id for job_id, _, _ in rec.runs) == Counter(ids)
    assert all(app.get_job(i).result == i for i in ids)


def test_a_genuinely_stale_completion_is_still_reported_stale(
        proxy: PgFaultProxy, proxied: Callable[..., App]) -> None:
    """Only a write that did not land counts as stale: the check is not a blanket pass."""
    app = proxied()
    rec = Recorder(app)
    release = threading.Event()

    @app.task(max_attempts=3)
    def work(ctx: JobContext) -> None:
        rec.ran(ctx)
        if ctx.attempt == 1:
            release.wait(10)

    job = work.enqueue()
    with running_worker(app) as worker:
        wait_for(lambda: rec.runs, what="the first attempt began")
        # Someone else takes the job over (as after a long pause), then the completion's
        # reply is lost: the retry finds a later attempt that was not ours.
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(f'UPDATE "{app.schema}".jobs SET attempt = attempt + 1, '
                         "worker_id = 'someone-else', errors = errors || "
                         """'[{"attempt": 1, "kind": "lease_expired"}]'::jsonb WHERE id = %s""",
                         (job.id,))
        proxy.cut(COMPLETE)
        release.set()
        wait_for(lambda: rec.named("job.stale_write"), what="the stale write reported")
        assert worker.completer.flush(10)
    assert not [f for f in rec.named("job.succeeded") if f["job_id"] == job.id]


def test_lost_heartbeat_replies_do_not_cost_a_running_job_its_lease(
        proxy: PgFaultProxy, proxied: Callable[..., App]) -> None:
    app = proxied()
    rec = Recorder(app)

    @app.task
    def slow(ctx: JobContext) -> None:
        rec.ran(ctx)
        time.sleep(FAST.lease_seconds * 2.5)  # outlives its lease: only heartbeats keep it

    job = slow.enqueue()
    with running_worker(app):
        wait_for(lambda: rec.runs, what="the job began")
        fault = proxy.drop_reply(HEARTBEAT)
        wait_for(lambda: app.get_job(job.id).state is JobState.SUCCEEDED, what="succeeded")
    assert fault.fired == 1
    assert rec.runs == [(job.id, 1, "run")]
    assert not rec.named("job.rescued") and not rec.named("job.stale_write")


def test_a_lost_checkpoint_reply_is_retried_in_place(
        proxy: PgFaultProxy, proxied: Callable[..., App]) -> None:
    app = proxied()
    rec = Recorder(app)

    @app.task
    def chunked(ctx: JobContext) -> None:
        start = ctx.last_checkpoint or 0
        for i in range(start, 6):
            rec.ran(ctx, f"chunk-{i}")
            ctx.checkpoint(i + 1)

    job = chunked.enqueue()
    fault = proxy.drop_reply(CHECKPOINT)
    with running_worker(app):
        wait_for(lambda: app.get_job(job.id).state is JobState.SUCCEEDED, what="succeeded")
    assert fault.fired == 1
    got = app.get_job(job.id)
    assert got.attempt == 1 and got.checkpoint == 6
    assert [what for _, _, what in rec.runs] == [f"chunk-{i}" for i in range(6)]


def test_a_lost_workflow_step_reply_does_not_run_the_step_again(
        proxy: PgFaultProxy, proxied: Callable[..., App]) -> None:
    app = proxied()
    rec = Recorder(app)

    @app.workflow()
    def flow(wf: Workflow) -> str:
        a = wf.step("a", lambda: rec.ran(wf.ctx, "a") or "A")
        b = wf.step("b", lambda: rec.ran(wf.ctx, "b") or "B")
        return a + b

    job = flow.enqueue()
    fault = proxy.drop_reply(WORKFLOW_STEP)
    with running_worker(app):
        wait_for(lambda: app.get_job(job.id).state is JobState.SUCCEEDED, what="succeeded")
    assert fault.fired == 1
    assert [what for _, _, what in rec.runs] == ["a", "b"]
    assert app.get_job(job.id).result == "AB"


def test_a_lost_schedule_firing_reply_fires_each_occurrence_once(
        proxy: PgFaultProxy, proxied: Callable[..., App]) -> None:
    app = proxied()
    rec = Recorder(app)

    @app.periodic("* * * * * *", name="tick", overlap="allow_all")
    def tick(ctx: JobContext) -> None:
        rec.ran(ctx)

    fault = proxy.drop_reply(SCHEDULE_FIRE)
    with running_worker(app):
        wait_for(lambda: fault.fired == 1, what="a firing's reply lost")
        wait_for(lambda: len(schedules_of(app.store).runs_list("tick", 100)) >= 5, timeout=20,
                 what="five occurrences after the fault")
    runs = schedules_of(app.store).runs_list("tick", 100)
    fire_times = [r.fire_at for r in runs]
    assert len(fire_times) == len(set(fire_times))
    jobs = [r.job_id for r in runs if r.job_id is not None]
    assert len(jobs) == len(set(jobs)), "one job per occurrence"
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        [(count,)] = conn.execute(f'SELECT count(*) FROM "{app.schema}".jobs').fetchall()
    assert count == len(jobs), "every job belongs to exactly one occurrence"


def test_a_lost_enqueue_reply_raises_and_a_unique_key_makes_the_retry_safe(
        proxy: PgFaultProxy, proxied: Callable[..., App]) -> None:
    app = proxied()

    @app.task
    def charge(order: int) -> None: ...

    fault = proxy.drop_reply(ENQUEUE)
    with pytest.raises(CommitUnknownError, match="whether the call committed is unknown"):
        charge.using(key="order-7").enqueue(7)
    assert fault.fired == 1
    again = charge.using(key="order-7").enqueue(7)  # the documented safe retry
    assert again.created is False
    assert [j.id for j in app.list_jobs()] == [again.id]


def test_workers_listen_again_after_their_connections_are_cut(
        proxy: PgFaultProxy, proxied: Callable[..., App]) -> None:
    # Polling so slow that only a wake-up can explain a prompt pickup.
    app = proxied(settings=dataclasses.replace(FAST, poll_interval=60))
    sender = App(PG_DSN, schema=app.schema)  # enqueues from outside the cut connections
    rec = Recorder(app)

    def work(ctx: JobContext) -> None:
        rec.ran(ctx)

    app.task(name="work")(work)
    sender.task(name="work")(work)
    try:
        with running_worker(app):
            first = sender.enqueue("work")
            wait_for(lambda: app.get_job(first.id).state is JobState.SUCCEEDED,
                     what="the first job")
            proxy.cut_all()  # the listener and every pooled connection, as a failover would
            time.sleep(1.5)  # the notifier notices, reconnects and LISTENs again
            sent = time.monotonic()
            second = sender.enqueue("work")
            wait_for(lambda: sender.get_job(second.id).state is JobState.SUCCEEDED,
                     timeout=10, what="the second job picked up by a wake-up")
            assert time.monotonic() - sent < 5
    finally:
        sender.close()
    assert [job_id for job_id, _, _ in rec.runs] == [first.id, second.id]
