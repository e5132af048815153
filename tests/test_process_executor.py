"""The process executor: a timeout or cancel kills the job's child process."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from shiftwork import JobState

from .conftest import running_worker, wait_for


def test_timeout_kills_a_job_blocked_in_c(rec_app: Any) -> None:
    app = rec_app.app
    app.import_path = "tests.apps.recording:app"
    job = rec_app.stuck_in_c.enqueue(60)
    ok = rec_app.in_child.enqueue(5)
    bad = rec_app.in_child.enqueue(-1)
    started = time.monotonic()
    with running_worker(app, {"hard": 3}, process_queues={"hard"}):
        wait_for(lambda: app.get_job(job.id).state is JobState.DEAD, timeout=30)
        wait_for(lambda: app.get_job(ok.id).state is JobState.SUCCEEDED, timeout=30)
        wait_for(lambda: app.get_job(bad.id).state is JobState.DEAD, timeout=30)
    assert time.monotonic() - started < 30  # not the 60 s the job would have slept
    err = app.get_job(job.id).errors[0]
    assert err["kind"] == "timeout" and "process was killed" in err["message"]
    result = app.get_job(ok.id).result
    assert result["n"] == 5 and result["attempt"] == 1 and result["pid"] != os.getpid()
    errors = app.get_job(bad.id).errors
    assert [e["type"] for e in errors] == ["ValueError", "ValueError"]
    assert "negative" in errors[0]["traceback"]


def test_cancel_kills_the_child(rec_app: Any) -> None:
    app = rec_app.app
    app.import_path = "tests.apps.recording:app"
    job = rec_app.in_child.enqueue(1)
    long = rec_app.slow.using(queue="hard").enqueue(60)
    with running_worker(app, {"hard": 2}, process_queues={"hard"}):
        wait_for(lambda: app.get_job(job.id).state is JobState.SUCCEEDED, timeout=30)
        wait_for(lambda: app.get_job(long.id).state is JobState.RUNNING, timeout=30)
        app.cancel_job(long.id)
        wait_for(lambda: app.get_job(long.id).state is JobState.CANCELLED, timeout=30)


def test_a_killed_worker_takes_its_job_processes_with_it(rec_app: Any, db: dict[str, str]
                                                         ) -> None:
    """SIGKILL on the worker leaves no child running its job: the lease runs out and the
    job is rescued, so a child left behind would run it twice at once."""
    import signal

    from .conftest import spawn_worker
    from .test_chaos import effects, stop

    job = rec_app.slow.using(queue="hard").enqueue(60)
    worker = spawn_worker(db, "recording", ["hard=1:process"])
    try:
        wait_for(lambda: any(e[0] == job.id for e in effects(rec_app)), timeout=30,
                 what="the job started in its child")
        child = next(e[2] for e in effects(rec_app) if e[0] == job.id)
        assert child != worker.pid
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)
        wait_for(lambda: not _alive(child), timeout=5, what="the child gone with its worker")
    finally:
        stop(worker)


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
