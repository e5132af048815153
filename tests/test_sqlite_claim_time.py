"""SQLite: a claim that waits for the write lock dates its lease from when it got the
lock, not from before the wait (it was a second short per second of waiting)."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from shiftwork import App


def test_a_claim_behind_a_writer_gets_its_whole_lease(tmp_path: Path) -> None:
    app = App(f"sqlite:///{tmp_path / 'jobs.db'}")
    app.migrate()

    @app.task
    def work() -> None: ...

    work.enqueue()
    writer = sqlite3.connect(tmp_path / "jobs.db", isolation_level=None, check_same_thread=False)
    writer.execute("BEGIN IMMEDIATE")  # another process's write, holding the lock
    released = threading.Event()

    def release() -> None:
        time.sleep(1.0)
        writer.execute("COMMIT")
        released.set()

    threading.Thread(target=release).start()
    (job,) = app.store.jobs.claim("default", 1, "w1", 5.0)
    got_lock = time.time()
    assert released.is_set()
    lease_left = app.get_job(job.id).lease_expires_at.timestamp() - got_lock  # type: ignore[union-attr]
    assert lease_left > 4.8, f"the lease ran from before the wait: {lease_left:.2f} s left of 5"
    writer.close()
