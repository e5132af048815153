"""The queue's contract, run against both engines (SQLite file and Postgres schema)."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest

from shiftwork import App, Backoff, FakeClock, JobContext, JobState, RetryIn
from shiftwork.flow.claiming import claim
from shiftwork.model.outcome import Outcome

from .conftest import running_worker, wait_for


def state_of(app: App, job_id: int) -> JobState:
    return app.get_job(job_id).state


def test_priority_then_age_order(app: App) -> None:
    order: list[str] = []

    @app.task(queue="default")
    def note(label: str) -> None:
        order.append(label)

    note.enqueue("low-1")
    note.using(priority=5).enqueue("high")
    note.enqueue("low-2")
    note.using(priority=-5).enqueue("lowest")
    claimed = app.store.jobs.claim("default", 10, "w", 30)
    assert [c.args[0] for c in claimed] == ["high", "low-1", "low-2", "lowest"]


def test_delayed_job_waits_for_its_time(make_app) -> None:  # type: ignore[no-untyped-def]
    clock = FakeClock(datetime.now(UTC))
    app = make_app(clock=clock)

    @app.task
    def later() -> None: ...

    job = later.using(delay=60).enqueue()
    assert state_of(app, job.id) is JobState.SCHEDULED
    assert app.store.jobs.claim("default", 10, "w", 30) == []
    stats = {s.queue: s for s in app.queue_stats()}["default"]
    assert (stats.available, stats.scheduled) == (0, 1)
    clock.advance(61)
    [claimed] = app.store.jobs.claim("default", 10, "w", 30)
    assert claimed.id == job.id and claimed.attempt == 1


def test_oldest_waiting_age_grows_while_stalled(make_app) -> None:  # type: ignore[no-untyped-def]
    clock = FakeClock(datetime.now(UTC))
    app = make_app(clock=clock)

    @app.task(queue="emails")
    def send() -> None: ...

    send.enqueue()
    clock.advance(30)
    send.enqueue()
    clock.advance(90)
    [stats] = app.queue_stats()
    assert stats.queue == "emails" and stats.available == 2
    assert stats.oldest_waiting_age == pytest.approx(120, abs=1)


def test_retries_with_backoff_then_dead_with_history(app: App) -> None:
    @app.task(max_attempts=3, retry=Backoff(initial=0.01, maximum=0.05))
    def flaky() -> None:
        raise ValueError("upstream said no")

    job = flaky.enqueue()
    with running_worker(app):
        wait_for(lambda: state_of(app, job.id) is JobState.DEAD, what="job dead")
    dead = app.get_job(job.id)
    assert dead.attempt == 3
    assert [e["attempt"] for e in dead.errors] == [1, 2, 3]
    assert all(e["type"] == "ValueError" and e["message"] == "upstream said no"
               for e in dead.errors)
    assert "Traceback" in dead.errors[-1]["traceback"]
    assert dead.finished_at is not None


def test_non_retryable_error_goes_dead_at_once(app: App) -> None:
    @app.task(max_attempts=5, retry=Backoff(initial=0.01, non_retryable=(KeyError,)))
    def broken() -> None:
        raise KeyError("missing")

    job = broken.enqueue()
    with running_worker(app):
        wait_for(lambda: state_of(app, job.id) is JobState.DEAD)
    assert app.get_job(job.id).attempt == 1


def test_retry_in_sets_the_delay(make_app) -> None:  # type: ignore[no-untyped-def]
    app = make_app()
    started = threading.Event()

    @app.task(max_attempts=3)
    def wait_a_bit() -> None:
        started.set()
        raise RetryIn(3600, "rate limited")

    job = wait_a_bit.enqueue()
    with running_worker(app):
        wait_for(lambda: state_of(app, job.id) is JobState.RETRYING)
    got = app.get_job(job.id)
    delay = (got.run_at - got.attempted_at).total_seconds()  # type: ignore[operator]
    assert 3590 < delay < 3610
    assert got.errors[0]["retry_in"] == 3600


def test_backoff_policy_bounds() -> None:
    policy = Backoff(initial=1, coefficient=2, maximum=30)
    assert [policy.cap(n) for n in (1, 2, 3, 4, 5, 6, 50, 10_000)] == [1, 2, 4, 8, 16, 30, 30, 30]
    assert policy.delay(3, rand=lambda: 0.5) == 2.0  # full jitter: uniform in [0, cap]
    assert Backoff(jitter=False, initial=3).delay(1) == 3
    assert policy.delay(9, RetryIn(7)) == 7


def test_async_tasks_run_on_the_event_loop(app: App) -> None:
    @app.task
    async def fetch(n: int) -> int:
        await asyncio.sleep(0.01)
        return n * 2

    jobs = fetch.enqueue_many([(i,) for i in range(20)])
    with running_worker(app):
        wait_for(lambda: all(state_of(app, j.id) is JobState.SUCCEEDED for j in jobs))
    assert app.get_job(jobs[3].id).result == 6


def test_sync_timeout_counts_as_failed_attempt(app: App) -> None:
    @app.task(timeout=0.3, max_attempts=2, retry=Backoff(initial=0.01))
    def spin() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # pure Python: the injected timeout reaches it
            pass

    job = spin.enqueue()
    with running_worker(app):
        wait_for(lambda: state_of(app, job.id) is JobState.DEAD, timeout=30)
    errors = app.get_job(job.id).errors
    assert [e["kind"] for e in errors] == ["timeout", "timeout"]


def test_async_timeout_cancels_the_coroutine(app: App) -> None:
    cancelled = threading.Event()

    @app.task(timeout=0.2, max_attempts=1)
    async def hang() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    job = hang.enqueue()
    with running_worker(app):
        wait_for(lambda: state_of(app, job.id) is JobState.DEAD)
    assert cancelled.is_set()
    assert app.get_job(job.id).errors[0]["kind"] == "timeout"


def test_unique_key_returns_existing_job(app: App) -> None:
    @app.task(unique=("customer",))
    def invoice(customer: int, note: str = "") -> None: ...

    first = invoice.enqueue(7, "a")
    again = invoice.enqueue(7, "different note, same key")
    other = invoice.enqueue(8)
    assert first.created and not again.created and again.id == first.id
    assert other.created and other.id != first.id
    bulk = invoice.enqueue_many([(7,), (9,), (9,)])
    assert [r.created for r in bulk] == [False, True, False]
    assert bulk[0].id == first.id and bulk[1].id == bulk[2].id
    # explicit key at enqueue
    k1 = invoice.using(key="2026-11").enqueue(1)
    k2 = invoice.using(key="2026-11").enqueue(2)
    assert k1.id == k2.id and not k2.created


def test_unique_keys_in_a_large_batch(app: App) -> None:
    """Hundreds of keyed jobs in one call (Postgres stages them by COPY): a key taken
    earlier or twice in the batch gives the holder's id; unkeyed jobs in the same call
    are each inserted, in order."""
    @app.task(unique=("n",))
    def keyed(n: int) -> None: ...

    @app.task
    def plain(n: int) -> None: ...

    held = keyed.enqueue(5)
    requests = [keyed.call(i % 300) for i in range(600)] + [plain.call(i) for i in range(50)]
    results = app.enqueue_many(requests)
    assert len(results) == 650
    first, second, plains = results[:300], results[300:600], results[600:]
    assert not first[5].created and first[5].id == held.id
    assert [r.created for r in first] == [i != 5 for i in range(300)]
    assert not any(r.created for r in second)
    assert [r.id for r in second] == [r.id for r in first]
    assert all(r.created for r in plains) and len({r.id for r in plains}) == 50
    assert [r.id for r in plains] == sorted(r.id for r in plains)
    jobs = app.list_jobs(task=keyed.name, limit=1000)
    assert len(jobs) == 300
    assert sorted(j.args[0] for j in jobs) == list(range(300))


def test_unique_key_is_free_again_after_the_job_finishes(app: App) -> None:
    @app.task(unique=True)
    def once(x: int) -> None: ...

    first = once.enqueue(1)
    [claimed] = app.store.jobs.claim("default", 1, "w", 30)
    app.store.jobs.complete_many([Outcome(claimed.id, claimed.attempt, JobState.SUCCEEDED)])
    second = once.enqueue(1)
    assert second.created and second.id != first.id


def test_fleet_wide_concurrency_limit(app: App) -> None:
    running = 0
    peak = 0
    lock = threading.Lock()

    @app.task(concurrency=2)
    def report(n: int) -> None:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        time.sleep(0.05)
        with lock:
            running -= 1

    @app.task
    def other() -> None: ...

    jobs = report.enqueue_many([(i,) for i in range(10)]) + other.enqueue_many([()] * 5)
    # two workers in one process share nothing but the database
    with running_worker(app, {"default": 5}), running_worker(app, {"default": 5}):
        wait_for(lambda: all(state_of(app, j.id) is JobState.SUCCEEDED for j in jobs))
    assert peak == 2


def test_claim_respects_limit_across_claimers(app: App) -> None:
    @app.task(concurrency=3)
    def limited() -> None: ...

    limited.enqueue_many([()] * 10)
    limits = app.runtime.registry.concurrency_limits("default")
    got = [claim(app.store, "default", 10, f"w{i}", 30, limits) for i in range(3)]
    assert [len(g) for g in got] == [3, 0, 0]


def test_cancel_waiting_and_running(app: App) -> None:
    started = threading.Event()

    @app.task
    async def long_one() -> None:
        started.set()
        await asyncio.sleep(60)

    @app.task(queue="other")
    def never() -> None: ...

    waiting = never.enqueue()
    assert app.cancel_job(waiting.id).state is JobState.CANCELLED
    job = long_one.enqueue()
    with running_worker(app):
        assert started.wait(10)
        app.cancel_job(job.id)
        wait_for(lambda: state_of(app, job.id) is JobState.CANCELLED)


def test_retry_dead_job_runs_again(app: App) -> None:
    fail = {"on": True}

    @app.task(max_attempts=1)
    def sometimes() -> str:
        if fail["on"]:
            raise RuntimeError("boom")
        return "ok"

    job = sometimes.enqueue()
    with running_worker(app):
        wait_for(lambda: state_of(app, job.id) is JobState.DEAD)
        fail["on"] = False
        app.retry_job(job.id)
        wait_for(lambda: state_of(app, job.id) is JobState.SUCCEEDED)
    assert app.get_job(job.id).attempt == 2


def test_stale_attempt_cannot_complete_or_heartbeat(app: App) -> None:
    @app.task
    def job_fn() -> None: ...

    job = job_fn.enqueue()
    [first] = app.store.jobs.claim("default", 1, "worker-a", lease_seconds=0.01)
    time.sleep(0.05)
    assert app.store.jobs.rescue() == [(job.id, JobState.AVAILABLE, job_fn.name, "default", 1)]
    [second] = app.store.jobs.claim("default", 1, "worker-b", lease_seconds=30)
    assert second.attempt == first.attempt + 1
    # worker-a comes back: its heartbeat holds nothing, its completion changes nothing
    assert app.store.jobs.heartbeat("worker-a", 30, [(job.id, first.attempt)]) == []
    assert app.store.jobs.complete_many(
        [Outcome(job.id, first.attempt, JobState.SUCCEEDED, result_json='"stale"')]) == set()
    assert app.store.jobs.complete_many(
        [Outcome(job.id, second.attempt, JobState.SUCCEEDED, result_json='"live"')]) == {job.id}
    got = app.get_job(job.id)
    assert got.state is JobState.SUCCEEDED and got.result == "live"
    assert got.errors[0]["kind"] == "lease_expired"


def test_rescue_of_last_attempt_goes_dead(app: App) -> None:
    @app.task(max_attempts=1)
    def once() -> None: ...

    job = once.enqueue()
    app.store.jobs.claim("default", 1, "w", lease_seconds=0.01)
    time.sleep(0.05)
    assert [r[:2] for r in app.store.jobs.rescue()] == [(job.id, JobState.DEAD)]


def test_prune_removes_old_finished_jobs_only(make_app) -> None:  # type: ignore[no-untyped-def]
    clock = FakeClock(datetime.now(UTC))
    app = make_app(clock=clock)

    @app.task(max_attempts=1)
    def t(ok: bool) -> None: ...

    ok_job, dead_job, waiting = t.enqueue(True), t.enqueue(False), None
    claimed = {c.args[0]: c for c in app.store.jobs.claim("default", 2, "w", 30)}
    app.store.jobs.complete_many([
        Outcome(ok_job.id, claimed[True].attempt, JobState.SUCCEEDED),
        Outcome(dead_job.id, claimed[False].attempt, JobState.DEAD, error={"type": "X"}),
    ])
    waiting = t.enqueue(True)
    clock.advance(3600)
    assert app.store.jobs.prune(finished_older_than=7200, dead_older_than=7200) == 0
    assert app.store.jobs.prune(finished_older_than=1800, dead_older_than=7200) == 1
    clock.advance(7200)
    assert app.store.jobs.prune(finished_older_than=1800, dead_older_than=7200) == 1
    remaining = {j.id for j in app.list_jobs()}
    assert remaining == {waiting.id}


def test_context_is_passed_when_asked(app: App) -> None:
    seen: dict[str, object] = {}

    @app.task
    def with_ctx(ctx: JobContext, x: int) -> None:
        seen.update(job_id=ctx.job_id, attempt=ctx.attempt, x=x, queue=ctx.queue)

    job = with_ctx.enqueue(5)
    with running_worker(app):
        wait_for(lambda: state_of(app, job.id) is JobState.SUCCEEDED)
    assert seen == {"job_id": job.id, "attempt": 1, "x": 5, "queue": "default"}


def test_queue_override_and_separate_pools(app: App) -> None:
    ran_on: list[str] = []

    @app.task(queue="bulk")
    def work(n: int) -> None:
        ran_on.append(threading.current_thread().name)

    a = work.enqueue(1)
    b = work.using(queue="urgent").enqueue(2)
    assert app.get_job(b.id).queue == "urgent"
    with running_worker(app, {"bulk": 1, "urgent": 1}):
        wait_for(lambda: all(state_of(app, j.id) is JobState.SUCCEEDED for j in (a, b)))
    assert sorted(n.split("-")[1] for n in ran_on) == ["bulk", "urgent"]


def test_bulk_enqueue_many_rows(app: App) -> None:
    @app.task
    def noop(i: int) -> None: ...

    results = noop.enqueue_many([(i,) for i in range(12_000)])
    assert len({r.id for r in results}) == 12_000
    [stats] = app.queue_stats()
    assert stats.available == 12_000


def test_run_at_must_be_aware(app: App) -> None:
    from shiftwork import ConfigurationError

    @app.task
    def t() -> None: ...

    with pytest.raises(ConfigurationError, match="timezone-aware"):
        t.using(run_at=datetime(2030, 1, 1)).enqueue()
    job = t.using(run_at=datetime.now(UTC) + timedelta(hours=1)).enqueue()
    assert state_of(app, job.id) is JobState.SCHEDULED


def test_snooze_reschedules_without_spending_an_attempt(app: App) -> None:
    from shiftwork import Snooze

    calls: list[int] = []

    @app.task(max_attempts=1)
    def poll_until_ready(ctx: JobContext) -> str:
        calls.append(ctx.attempt)
        if len(calls) < 3:
            raise Snooze(0.05)
        return "ready"

    job = poll_until_ready.enqueue()
    with running_worker(app):
        wait_for(lambda: state_of(app, job.id) is JobState.SUCCEEDED)
    got = app.get_job(job.id)
    assert calls == [1, 2, 3] and got.result == "ready"  # ctx.attempt counts runs
    # two snoozed runs did not count: the one counted attempt was the last run
    assert (got.counted_attempt, got.max_attempts, got.uncounted) == (1, 1, 2)
    assert got.errors == []
