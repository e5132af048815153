"""Hold, release, run now and edit one job (issue 30), on both engines, with real workers."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shiftwork import (
    App,
    Backoff,
    ConfigurationError,
    FakeClock,
    JobNotFoundError,
    JobState,
    JobStateError,
    Workflow,
)
from shiftwork.testing import drain

from .conftest import running_worker, wait_for


def test_a_held_job_is_never_claimed_and_runs_once_released(app: App) -> None:
    ran: list[str] = []

    @app.task(queue="q")
    def work(name: str) -> None:
        ran.append(name)

    held = work.using(priority=5).enqueue("held")
    app.hold(held.id, who="alice")
    assert app.get_job(held.id).state is JobState.HELD
    other = work.enqueue("other")  # lower priority: claimed after the held job, if ever
    with running_worker(app, {"q": 1}):
        wait_for(lambda: app.get_job(other.id).state is JobState.SUCCEEDED, what="other")
        assert ran == ["other"]  # the claim that took `other` passed the held job by
        assert app.get_job(held.id).state is JobState.HELD
        released = app.release(held.id, who="alice")
        assert released.state in (JobState.AVAILABLE, JobState.RUNNING, JobState.SUCCEEDED)
        wait_for(lambda: app.get_job(held.id).state is JobState.SUCCEEDED, what="released")
    assert ran == ["other", "held"]
    audit = app.store.console.bulk_actions_list()
    assert [(a.who, a.action, a.filter, a.done) for a in audit[:2]] == [
        ("alice", "release", f"id={held.id}", 1), ("alice", "hold", f"id={held.id}", 1)]


def test_holding_a_running_job_holds_it_when_its_attempt_fails(app: App) -> None:
    go = threading.Event()
    attempts: list[int] = []

    @app.task(queue="q", max_attempts=5, retry=Backoff(initial=0, jitter=False))
    def flaky(ctx: object) -> str:
        attempts.append(1)
        if len(attempts) == 1:
            assert go.wait(30)
            raise ConnectionError("upstream down")
        return "ok"

    job = flaky.enqueue()
    with running_worker(app, {"q": 1}):
        wait_for(lambda: app.get_job(job.id).state is JobState.RUNNING, what="running")
        asked = app.hold(job.id)
        assert asked.state is JobState.RUNNING and asked.hold_requested
        go.set()
        wait_for(lambda: app.get_job(job.id).state is JobState.HELD, what="held")
        got = app.get_job(job.id)
        assert got.attempt == 1 and not got.hold_requested  # not retried
        assert got.errors[-1]["type"] == "ConnectionError"
        app.release(job.id)
        wait_for(lambda: app.get_job(job.id).state is JobState.SUCCEEDED, what="retried")
    assert len(attempts) == 2 and app.get_job(job.id).result == "ok"


def test_a_hold_asked_of_a_running_job_lets_a_success_finish(wapp: App) -> None:
    @wapp.task
    def fine() -> int:
        return 1

    job = fine.enqueue()
    from shiftwork.flow.claiming import claim

    [claimed] = claim(wapp.store, "default", 1, "w1", 30.0, None)
    assert wapp.hold(job.id).hold_requested
    with pytest.raises(JobStateError, match="running: only waiting or held jobs can be upd"):
        wapp.update_job(job.id, priority=3)
    with pytest.raises(JobStateError, match="running: only waiting or held"):
        wapp.run_now(job.id)
    released = wapp.release(job.id)  # withdraws the request
    assert released.state is JobState.RUNNING and not released.hold_requested
    assert claimed.id == job.id


def test_release_puts_a_job_back_where_it_belongs(wapp: App, clock: FakeClock) -> None:
    @wapp.task
    def later() -> None: ...

    future = later.using(delay=3600).enqueue()
    due = later.enqueue()
    for job in (future, due):
        wapp.hold(job.id)
    assert wapp.hold(due.id).state is JobState.HELD  # holding twice is no error
    assert wapp.release(future.id).state is JobState.SCHEDULED
    assert wapp.release(due.id).state is JobState.AVAILABLE
    with pytest.raises(JobStateError, match="available: it is not held"):
        wapp.release(due.id)
    wapp.hold(future.id)
    now = wapp.run_now(future.id)
    assert now.state is JobState.AVAILABLE and now.run_at <= clock.now()
    assert drain(wapp).succeeded == 2


def test_update_a_waiting_or_held_job_checked_as_enqueue(wapp: App, clock: FakeClock) -> None:
    @wapp.task(queue="a")
    def moved() -> None: ...

    job = moved.enqueue()
    when = clock.now() + timedelta(hours=2)
    got = wapp.update_job(job.id, run_at=when, priority=7, queue="b")
    assert (got.state, got.run_at, got.priority, got.queue) == (JobState.SCHEDULED, when, 7, "b")
    assert wapp.update_job(job.id, run_at=clock.now()).state is JobState.AVAILABLE
    wapp.hold(job.id)
    assert wapp.update_job(job.id, priority=-3).state is JobState.HELD  # stays held
    with pytest.raises(ConfigurationError, match="priority"):
        wapp.update_job(job.id, priority=1000)
    with pytest.raises(ConfigurationError, match="bad queue name"):
        wapp.update_job(job.id, queue="no spaces")
    with pytest.raises(ConfigurationError, match="timezone-aware"):
        wapp.update_job(job.id, run_at=datetime(2030, 1, 1))
    with pytest.raises(ConfigurationError, match="give run_at, priority or queue"):
        wapp.update_job(job.id)
    with pytest.raises(JobNotFoundError):
        wapp.update_job(10**9, priority=1)
    assert drain(wapp, ["b"]).ran == 0  # held
    wapp.release(job.id)
    assert drain(wapp, ["b"]).succeeded == 1
    [audit] = [a for a in wapp.store.console.bulk_actions_list() if a.action == "update"][:1]
    assert audit.filter == f"id={job.id} priority=-3"


def test_finished_jobs_are_refused(wapp: App) -> None:
    @wapp.task
    def quick() -> None: ...

    job = quick.enqueue()
    drain(wapp)
    for act in (wapp.hold, wapp.release, wapp.run_now):
        with pytest.raises(JobStateError, match=f"job {job.id} is succeeded"):
            act(job.id)
    with pytest.raises(JobStateError, match="succeeded: only waiting or held"):
        wapp.update_job(job.id, priority=1)


def test_a_held_job_keeps_its_unique_key_and_can_be_cancelled(wapp: App) -> None:
    @wapp.task
    def once() -> None: ...

    first = once.using(key="k").enqueue()
    wapp.hold(first.id)
    again = once.using(key="k").enqueue()
    assert again.id == first.id  # the held job still holds the key
    assert wapp.cancel_job(first.id).state is JobState.CANCELLED


def test_a_held_workflow_does_not_wake_until_released(wapp: App, clock: FakeClock) -> None:
    done: list[str] = []

    @wapp.workflow
    def remind(wf: Workflow) -> None:
        wf.step("first", done.append, "first")
        wf.sleep("nap", 3600)
        wf.wait_for_event("go", timeout=86400)
        wf.step("last", done.append, "last")

    job = remind.enqueue()
    drain(wapp)
    assert wapp.get_job(job.id).state is JobState.SCHEDULED
    wapp.hold(job.id)
    clock.advance(7200)  # its sleep is over, but it is held
    assert drain(wapp).ran == 0
    wapp.release(job.id)
    drain(wapp)  # wakes, now waits for the event
    assert wapp.get_job(job.id).state is JobState.SCHEDULED
    wapp.hold(job.id)
    wapp.send_event(job.id, "go")  # recorded, but the held workflow does not run
    assert drain(wapp).ran == 0 and done == ["first"]
    assert wapp.release(job.id).state is JobState.AVAILABLE  # woken by the event
    drain(wapp)
    assert done == ["first", "last"]
    assert wapp.get_job(job.id).state is JobState.SUCCEEDED


def test_hold_and_release_by_filter(wapp: App) -> None:
    @wapp.task(queue="imports")
    def load() -> None: ...

    ids = [load.enqueue().id for _ in range(3)]
    result = wapp.bulk("hold", queue="imports", who="ops")
    assert (result.matched, result.done) == (3, 3)
    assert {wapp.get_job(i).state for i in ids} == {JobState.HELD}
    assert drain(wapp, ["imports"]).ran == 0
    stats = {s.queue: s for s in wapp.queue_stats()}["imports"]
    assert (stats.held, stats.available, stats.oldest_waiting_age) == (3, 0, None)
    from shiftwork.observe.metrics import Metrics

    scrape = Metrics(wapp).exposition()
    scrape = scrape.decode() if isinstance(scrape, bytes) else scrape
    assert 'shiftwork_queue_held{queue="imports"} 3.0' in scrape
    assert 'shiftwork_queue_oldest_waiting_age_seconds{queue="imports"} 0.0' in scrape
    result = wapp.bulk("release", queue="imports", who="ops")
    assert result.done == 3
    assert drain(wapp, ["imports"]).succeeded == 3


def test_time_is_checked_against_now(wapp: App, clock: FakeClock) -> None:
    """run_at in the past makes an edited job due; the clock is the app's."""

    @wapp.task
    def t() -> None: ...

    job = t.using(delay=60).enqueue()
    got = wapp.update_job(job.id, run_at=clock.now() - timedelta(seconds=1))
    assert got.state is JobState.AVAILABLE
    assert got.run_at.tzinfo is not None and got.run_at < datetime.now(UTC) + timedelta(days=1)


def test_a_rescued_or_handed_back_job_a_hold_was_asked_of_is_held(wapp: App,
                                                                  clock: FakeClock) -> None:
    from shiftwork.flow.claiming import claim

    @wapp.task(max_attempts=3)
    def slow() -> None: ...

    lost, back = slow.enqueue(), slow.enqueue()
    claimed = claim(wapp.store, "default", 2, "w1", 5.0, None)
    assert {j.id for j in claimed} == {lost.id, back.id}
    wapp.hold(lost.id)
    wapp.hold(back.id)
    wapp.store.jobs.hand_back("w1", [(back.id, next(j.attempt for j in claimed
                                                    if j.id == back.id))])
    assert wapp.get_job(back.id).state is JobState.HELD
    clock.advance(60)  # its worker stopped renewing the lease
    assert [(r.id, r.state) for r in wapp.store.jobs.rescue()] == [(lost.id, JobState.HELD)]
    got = wapp.get_job(lost.id)
    assert got.state is JobState.HELD and not got.hold_requested
    assert got.errors[-1]["kind"] == "lease_expired"


def test_migration_0032_on_a_database_with_jobs(db: dict[str, str]) -> None:
    """Upgrading a database that has jobs: the new CHECK is validated over them; on SQLite
    a connection opened before the migration sees the new constraint; and the previous
    release's unique insert (its ON CONFLICT names four states) still works."""
    import sqlite3

    import psycopg

    from shiftwork.store.open import open_store

    sqlite = db["dsn"].startswith("sqlite")
    schema = db["schema"]
    table = "jobs" if sqlite else f'"{schema}".jobs'
    mark = "?" if sqlite else "%s"
    old_insert = (f"INSERT INTO {table} (queue, task, args, state, max_attempts, run_at, "
                  f"created_at, unique_key) VALUES ('default', 'old', '{{\"args\": []}}', "
                  f"'available', 1, {mark}, {mark}, 'k') ON CONFLICT (unique_key) WHERE "
                  "unique_key IS NOT NULL AND state IN ('scheduled', 'available', 'running', "
                  "'retrying') DO NOTHING RETURNING id")
    now = 0.0 if sqlite else datetime.now(UTC)
    raw: Any = sqlite3.connect(db["dsn"].removeprefix("sqlite:///")) if sqlite \
        else psycopg.connect(db["dsn"], autocommit=True)

    store = open_store(db["dsn"], schema=db["schema"])
    try:
        every = store._migrations  # type: ignore[attr-defined]
        store._migrations = [m for m in every if m[0] < 32]  # type: ignore[attr-defined]
        store.migrate()
        [(kept,)] = raw.execute(old_insert, (now, now)).fetchall()  # the old release's
        if sqlite:
            raw.commit()
        store._migrations = every  # type: ignore[attr-defined]
        assert store.migrate()[0] == 32  # and any later ones
        assert raw.execute(old_insert, (now, now)).fetchall() == []  # still deduplicated
        if sqlite:
            raw.commit()
        held, _ = store.console.hold_batch([kept])
        assert held == [kept] and store.jobs.get(kept).state is JobState.HELD
        if sqlite:  # a connection opened before the migration takes `held` too
            raw.execute("UPDATE jobs SET state = 'available' WHERE id = ?", (kept,))
            raw.execute("UPDATE jobs SET state = 'held' WHERE id = ?", (kept,))
            raw.commit()
            assert store.jobs.get(kept).state is JobState.HELD
    finally:
        raw.close()
        store.close()
