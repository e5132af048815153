"""Crash recovery with real worker processes: SIGKILL, SIGSTOP/SIGCONT, SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from shiftwork import App, JobState

from .conftest import FAST, spawn_worker, wait_for

pytestmark = pytest.mark.chaos


def effects(module: Any) -> list[tuple[int, int, int, str]]:
    return [tuple(r) for r in module._conn().execute(  # type: ignore[misc]
        f"SELECT job_id, attempt, pid, phase FROM {module.effects_table()} ORDER BY job_id, attempt"
    ).fetchall()]


def states(app: App) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for s in app.queue_stats():
        counts["waiting"] += s.available + s.scheduled
        counts["running"] += s.running
        counts["succeeded"] += s.succeeded
        counts["dead"] += s.dead
    return counts


def freeze(proc: subprocess.Popen[bytes], db: dict[str, str]) -> None:
    """SIGSTOP a worker, at a moment when it is not holding SQLite's write lock.

    A process frozen inside a SQLite write transaction stalls every other writer until
    it resumes (a property of the engine, documented); the test wants the other case.
    """
    import sqlite3
    import time

    for _ in range(100):
        proc.send_signal(signal.SIGSTOP)
        if not db["dsn"].startswith("sqlite"):
            return
        conn = sqlite3.connect(db["dsn"].split(":///", 1)[1], timeout=0.2, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("ROLLBACK")
            return
        except sqlite3.OperationalError:
            proc.send_signal(signal.SIGCONT)
            time.sleep(0.02)
        finally:
            conn.close()
    raise AssertionError("could not freeze the worker outside a write transaction")


def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGCONT)
        proc.send_signal(sig)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_kill9_one_of_two_workers_loses_nothing(rec_app: Any, db: dict[str, str]) -> None:
    app = rec_app.app
    total = 2000
    rec_app.work.enqueue_many([(i, 0.004) for i in range(total)])
    a = spawn_worker(db, "recording", ["work=8"])
    b = spawn_worker(db, "recording", ["work=8"])
    try:
        wait_for(lambda: states(app)["succeeded"] >= 300, timeout=120, what="300 jobs done")
        wait_for(lambda: any(e[2] == a.pid for e in effects(rec_app)), what="killed pid worked")
        a.send_signal(signal.SIGKILL)
        a.wait(10)
        wait_for(lambda: states(app)["succeeded"] == total, timeout=180, what="all jobs done")
    finally:
        stop(a)
        stop(b)
    assert states(app) == {"waiting": 0, "running": 0, "succeeded": total, "dead": 0}
    runs: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for job_id, attempt, pid, _ in effects(rec_app):
        runs[job_id].append((attempt, pid))
    assert len(runs) == total
    twice = {job_id: r for job_id, r in runs.items() if len(r) > 1}
    # Only jobs that were running in the killed process ran again, and each at most once more.
    for job_id, r in twice.items():
        assert len(r) == 2, (job_id, r)
        assert sorted(r)[0][1] == a.pid, (job_id, r)
    # The kill hit jobs in flight: they were rescued from the dead worker's expired leases.
    rescued = {j.id for j in app.list_jobs(limit=total)
               if any(e["kind"] == "lease_expired" for e in j.errors)}
    assert rescued, "the killed worker had jobs in flight; they must have been rescued"
    assert set(twice) <= rescued
    assert len(rescued) <= 8 + 64  # its pool, plus outcomes it had not yet written


def test_sigstop_stale_worker_cannot_complete(rec_app: Any, db: dict[str, str],
                                              tmp_path: Path) -> None:
    app = rec_app.app
    job = rec_app.slow.enqueue(2.0)
    log_a = tmp_path / "a.log"
    a = spawn_worker(db, "recording", ["work=2"], log_path=log_a)
    b = None
    try:
        wait_for(lambda: [e for e in effects(rec_app) if e[3] == "start"], what="A started")
        freeze(a, db)
        b = spawn_worker(db, "recording", ["work=2"])
        wait_for(lambda: app.get_job(job.id).state is JobState.SUCCEEDED, timeout=60,
                 what="job re-run elsewhere")
        a.send_signal(signal.SIGCONT)
        wait_for(lambda: (job.id, 1, a.pid, "done") in effects(rec_app), timeout=30,
                 what="the stale attempt finishing its work")
        wait_for(lambda: "rejected" in log_a.read_text(), timeout=30, what="rejection logged")
    finally:
        stop(a)
        if b:
            stop(b)
    final = app.get_job(job.id)
    assert final.state is JobState.SUCCEEDED and final.attempt == 2
    assert effects(rec_app) == [(job.id, 1, a.pid, "start"), (job.id, 1, a.pid, "done"),
                                (job.id, 2, b.pid, "start"), (job.id, 2, b.pid, "done")]
    assert [e["kind"] for e in final.errors] == ["lease_expired"]


def test_a_second_sigterm_hands_running_jobs_back_without_the_grace_period(
        rec_app: Any, db: dict[str, str], tmp_path: Path) -> None:
    """Issue 28: the second signal used to log that it stopped without waiting, then wait
    out the whole grace period all the same."""
    app = rec_app.app
    long = rec_app.slow.enqueue_many([(60.0,)] * 2)
    log = tmp_path / "worker.log"
    a = spawn_worker(db, "recording", ["work=2"], extra=["--grace", "120", "--log-level", "INFO"],
                     log_path=log)
    try:
        wait_for(lambda: len([e for e in effects(rec_app) if e[3] == "start"]) == 2,
                 what="both running")
        a.send_signal(signal.SIGTERM)
        wait_for(lambda: "worker.stopping" in log.read_text(), what="the first signal taken")
        started = time.monotonic()
        a.send_signal(signal.SIGTERM)
        assert a.wait(60) == 0  # well inside the 120 s grace period
        took = time.monotonic() - started
    finally:
        stop(a)
    assert "second SIGTERM: handing running jobs back now" in log.read_text()
    for r in long:
        job = app.get_job(r.id)
        assert job.state is JobState.AVAILABLE
        assert job.errors[-1]["kind"] == "handed_back"
        assert job.counted_attempt == 0
    print(f"second SIGTERM to exit: {took:.2f}s")


def test_sigterm_finishes_short_jobs_and_hands_back_the_rest(rec_app: Any,
                                                            db: dict[str, str]) -> None:
    app = rec_app.app
    short = rec_app.slow.enqueue_many([(0.6,)] * 3)
    long = rec_app.slow.enqueue_many([(4.0,)] * 2)
    a = spawn_worker(db, "recording", ["work=5"], extra=["--grace", "1.5"])
    try:
        wait_for(lambda: len([e for e in effects(rec_app) if e[3] == "start"]) == 5,
                 what="all five running")
        a.send_signal(signal.SIGTERM)
        assert a.wait(20) == 0
    finally:
        stop(a)
    for r in short:
        assert app.get_job(r.id).state is JobState.SUCCEEDED
    for r in long:
        job = app.get_job(r.id)
        assert job.state is JobState.AVAILABLE
        assert job.errors[-1]["kind"] == "handed_back"
        assert (job.max_attempts, job.counted_attempt) == (10, 0)  # the run is not counted
    b = spawn_worker(db, "recording", ["work=5"])
    try:
        wait_for(lambda: all(app.get_job(r.id).state is JobState.SUCCEEDED for r in long),
                 timeout=60, what="handed-back jobs done elsewhere")
    finally:
        stop(b)
    assert states(app)["succeeded"] == 5


def test_fast_settings_are_what_the_recording_app_uses() -> None:
    # The chaos timings above assume a lease of 3 heartbeats; keep the two in step.
    assert FAST.lease_seconds == 3 * FAST.heartbeat_interval
    assert os.environ.get("SHIFTWORK_TEST_HEARTBEAT", "0.5") == "0.5"


def test_workflow_replays_after_kill9_without_repeating_done_steps(rec_app: Any,
                                                                   db: dict[str, str]) -> None:
    app = rec_app.app
    job = rec_app.pipeline.enqueue(30.0)
    a = spawn_worker(db, "recording", ["work=2"])
    b = None
    try:
        wait_for(lambda: (job.id, 1, a.pid, "two") in effects(rec_app), what="step two running")
        a.send_signal(signal.SIGKILL)
        a.wait(10)
        # the second run would sleep 30 s in step two: shorten it by re-pointing the argument
        b = spawn_worker(db, "recording", ["work=2"], env={"SHIFTWORK_TEST_FAST_STEPS": "1"})
        wait_for(lambda: app.get_job(job.id).state is JobState.SUCCEEDED, timeout=60,
                 what="workflow finished on the second worker")
    finally:
        stop(a)
        if b:
            stop(b)
    phases = [(e[3], e[2]) for e in effects(rec_app)]
    assert phases.count(("one", a.pid)) == 1 and not any(
        p == "one" and pid != a.pid for p, pid in phases)  # never repeated
    assert [p for p, _ in phases].count("two") == 2  # interrupted, then run again
    assert [p for p, _ in phases].count("three") == 1
    assert app.get_job(job.id).result == ["one", "two", "three"]
