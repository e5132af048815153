"""SQLite: a worker frozen inside a write transaction stalls every writer until it resumes.

That is the engine's single-writer design, not something shiftwork can route around.
This test measures the stall (reported in docs/architecture.md beside the lease
settings) and checks that, when the frozen worker resumes, nothing is lost and nothing
runs twice unfenced: while frozen its lease runs out, but nobody can rescue it (a rescue
is a write); once it resumes, either it finishes first or its job is rescued and its
late writes are rejected by the attempt fence.
"""

from __future__ import annotations

import signal
import sqlite3
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from .conftest import spawn_worker, wait_for
from .test_chaos import effects, states, stop

pytestmark = [pytest.mark.fault, pytest.mark.chaos]

FREEZE = 3.0  # seconds; twice the lease of the recording app


def _stopped(pid: int) -> bool:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return fields[0] == "T"


def _write_lock_held(dsn: str) -> bool:
    """Whether some connection holds the database's write lock (a BEGIN IMMEDIATE that
    does not wait fails)."""
    path = dsn.removeprefix("sqlite:///").removeprefix("sqlite://")
    probe = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        probe.execute("BEGIN IMMEDIATE")
        probe.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError as e:
        if "locked" not in str(e):
            raise
        return True
    finally:
        probe.close()


def _held_for(dsn: str, seconds: float) -> bool:
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        if not _write_lock_held(dsn):
            return False
        time.sleep(0.02)
    return True


@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)
def test_a_frozen_writer_stalls_writers_and_loses_nothing(
        rec_app: Any, db: dict[str, str], engine: str, capsys: pytest.CaptureFixture[str]
        ) -> None:
    app = rec_app.app
    total = 200
    rec_app.work.enqueue_many([(i, 0.002) for i in range(total)])
    frozen = spawn_worker(db, "recording", ["freeze=1"])
    other = spawn_worker(db, "recording", ["work=4"])
    try:
        wait_for(lambda: states(app)["succeeded"] >= 20, timeout=60, what="work flowing")
        rec_app.freeze_in_write.enqueue(7)
        wait_for(lambda: _stopped(frozen.pid), timeout=20, what="the worker froze in its write")
        # Stopped is not yet proof of the lock: wait until the lock is seen held for a
        # while (the other worker holds it only for milliseconds at a time).
        wait_for(lambda: _held_for(db["dsn"], 0.3), timeout=10,
                 what="the frozen worker holds the write lock")
        frozen_at = time.monotonic()
        # A writer now waits for the lock: time an enqueue from here while the other
        # worker's claims and completions wait too.
        done_before = states(app)["succeeded"]
        enqueued_after: list[float] = []

        def enqueue() -> None:
            rec_app.work.enqueue(-1, 0.0)
            enqueued_after.append(time.monotonic() - frozen_at)

        writer = threading.Thread(target=enqueue)
        writer.start()
        time.sleep(FREEZE)
        assert not enqueued_after, "no write can commit while the lock holder is frozen"
        assert states(app)["succeeded"] == done_before, "the other worker made no progress"
        frozen.send_signal(signal.SIGCONT)
        writer.join(30)
        stall = enqueued_after[0]
        wait_for(lambda: states(app)["succeeded"] == total + 2, timeout=120,
                 what="every job succeeded")
    finally:
        stop(frozen)
        stop(other)
    assert states(app) == {"waiting": 0, "running": 0, "succeeded": total + 2, "dead": 0}
    runs: dict[int, list[int]] = defaultdict(list)
    for job_id, attempt, _pid, phase in effects(rec_app):
        if phase in ("start",):
            runs[job_id].append(attempt)
    assert len(runs) == total + 2
    for job_id, attempts in runs.items():
        assert len(attempts) == len(set(attempts)), f"job {job_id} ran twice in one attempt"
    with capsys.disabled():
        print(f"\n[frozen SQLite writer] freeze {FREEZE:.1f} s -> an enqueue waited "
              f"{stall:.2f} s; no writer committed meanwhile")
    assert FREEZE <= stall < FREEZE + 5
