"""One wake-up per job, not per process: with 8 worker processes listening, each
enqueue of one job leads to about one claim (worker/wake_share.py).

Claims are counted by the server (pg_stat_statements), on a throwaway cluster of the
test's own, since the extension must be preloaded."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from .conftest import IN_CI, imported_app, spawn_worker, wait_for
from .faults.pgcluster import ThrowawayCluster

pytestmark = pytest.mark.fault  # real worker processes and a server of its own

PROCESSES = 8
JOBS = 12


@pytest.fixture
def counted_cluster() -> Iterator[ThrowawayCluster]:
    try:
        c = ThrowawayCluster({"shared_preload_libraries": "pg_stat_statements",
                              "max_connections": "100"})
    except (FileNotFoundError, OSError) as exc:
        if IN_CI:
            pytest.fail(f"cannot start a throwaway PostgreSQL cluster: {exc}")
        pytest.skip(f"cannot start a throwaway PostgreSQL cluster: {exc}")
    with psycopg.connect(c.dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    yield c
    c.close()


def claims(dsn: str) -> int:
    """Claim statements run on the server so far (prepared or not; a plain queue's claim
    is a call of the ``claim_jobs`` function, migration 0016, whose inner statement
    pg_stat_statements does not count at its default ``track = top``)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT coalesce(sum(calls), 0) FROM pg_stat_statements "
                           "WHERE query LIKE '%%WITH next AS%%FOR UPDATE SKIP LOCKED%%' "
                           "OR query LIKE '%%.claim_jobs(%%'").fetchone()
    assert row is not None
    return int(row[0])


def test_one_enqueue_wakes_about_one_of_eight_processes(
        counted_cluster: ThrowawayCluster, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    db = {"dsn": counted_cluster.dsn, "schema": "fleet"}
    with imported_app(monkeypatch, "fleet", db["dsn"], db["schema"]) as fleet:
        # Polling every 30 s: within the test, only wake-ups lead to claims.
        procs = [spawn_worker(db, "fleet", ["fleet=4"], env={"SHIFTWORK_TEST_POLL": "30"},
                              log_path=tmp_path / f"worker{i}.log") for i in range(PROCESSES)]
        try:
            wait_for(lambda: len(fleet.app.store.fleet.workers_list()) == PROCESSES, timeout=60,
                     what="8 workers registered")
            time.sleep(1.5)  # each has run its first claim and heartbeat
            before = claims(db["dsn"])
            ids: list[Any] = []
            for _ in range(JOBS):
                ids.append(fleet.noop.enqueue().id)
                done = ids[-1]
                # Picked up by a wake-up (polling would take 30 s).
                wait_for(lambda done=done: fleet.app.store.jobs.get(done).state.value
                         == "succeeded", timeout=10, what="the job to run")
            per_job = (claims(db["dsn"]) - before) / JOBS
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                p.wait(30)
    # Without sharing, every process claims on every wake-up: 8 per job.
    assert per_job <= 2.0, f"{per_job:.2f} claims per job with {PROCESSES} processes"


def claims_per_job(dsn: str, enqueue: Callable[[], int], done: Callable[[int], bool]) -> float:
    """Claims on the server per job, over JOBS jobs enqueued one at a time by
    ``enqueue`` (returns the job's id), each run (``done``) before the next."""
    before = claims(dsn)
    for _ in range(JOBS):
        job_id = enqueue()
        # Picked up by a wake-up (polling would take 30 s).
        wait_for(lambda job_id=job_id: done(job_id), timeout=10, what="the job to run")
    return (claims(dsn) - before) / JOBS


def test_an_async_enqueue_wakes_no_more_processes_than_a_sync_one(
        counted_cluster: ThrowawayCluster, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    """enqueue_async and enqueue share one insert pipeline (jobs/enqueue.py): its
    wake-ups are the sync path's, one share per job, not one per listening process."""
    db = {"dsn": counted_cluster.dsn, "schema": "fleet"}
    with imported_app(monkeypatch, "fleet", db["dsn"], db["schema"]) as fleet:
        procs = [spawn_worker(db, "fleet", ["fleet=4"], env={"SHIFTWORK_TEST_POLL": "30"},
                              log_path=tmp_path / f"worker{i}.log") for i in range(PROCESSES)]
        loop = asyncio.new_event_loop()  # the async pool belongs to one loop: keep it
        try:
            wait_for(lambda: len(fleet.app.store.fleet.workers_list()) == PROCESSES, timeout=60,
                     what="8 workers registered")
            time.sleep(1.5)  # each has run its first claim and heartbeat

            def succeeded(job_id: int) -> bool:
                return bool(fleet.app.store.jobs.get(job_id).state.value == "succeeded")

            sync = claims_per_job(db["dsn"], lambda: int(fleet.noop.enqueue().id), succeeded)
            async_ = claims_per_job(
                db["dsn"], lambda: int(loop.run_until_complete(fleet.noop.enqueue_async()).id),
                succeeded)
        finally:
            loop.run_until_complete(fleet.app.aclose())
            loop.close()
            for p in procs:
                p.terminate()
            for p in procs:
                p.wait(30)
    # Before the one pipeline, each async enqueue woke every process: 8 claims per job.
    assert async_ <= 2.0, f"{async_:.2f} claims per async job (sync: {sync:.2f})"
    assert async_ <= sync + 1.0, f"{async_:.2f} claims per async job, {sync:.2f} per sync one"


def test_a_batch_wakes_as_many_processes_as_it_has_jobs() -> None:
    from shiftwork.store.wakeups import parse_wakeup, shared_wakeups

    payload = shared_wakeups([("emails", 3)])[0]
    queue, count, token = parse_wakeup(payload)
    assert (queue, count) == ("emails", 3) and token >= 0
    assert parse_wakeup("emails") == ("emails", None, 0)  # a bare queue wakes everyone
    assert parse_wakeup("*") == ("*", None, 0)
