"""Issue 13, the edges around a workflow run claimed ahead that never began.

A real worker process is taught to claim ahead (a stream of no-op jobs), both its slots
are then taken by long jobs, and an event makes a suspended workflow due: the worker
claims its run ahead, and the run waits for a slot. Then:

- the worker is killed (SIGKILL) on the workflow's last attempt: the lease rescue must
  not end it dead with nothing compensated; the run never began, so it is not counted,
  and a fresh worker runs it (its last step fails, it compensates, ends ``compensated``);
- the workflow is cancelled while so claimed, with the worker killed or not: the cancel
  must compensate (``cancelled``, ``undo-a`` ran), not skip straight to ``cancelled``.
"""

from __future__ import annotations

import signal
import subprocess
from collections import Counter
from typing import Any

import pytest

from shiftwork import JobState

from .conftest import spawn_worker, wait_for
from .test_workflow_chaos import effects_by_job

pytestmark = pytest.mark.chaos


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def _claimed_ahead(rec_app: Any, db: dict[str, str], flow: Any, fail: bool,
                   block: float) -> tuple[subprocess.Popen[bytes], int]:
    """A worker holding a run of ``flow`` claimed ahead, not begun (slots blocked)."""
    app = rec_app.app
    worker = spawn_worker(db, "recording", ["ahead=2"])
    job_id = flow.enqueue(fail).id
    wait_for(lambda: app.get_job(job_id).state is JobState.SCHEDULED, timeout=30,
             what="the workflow waits for its event")
    # after the workflow's first run: its (long) run must not be the latest average
    rec_app.ahead_short.enqueue_many([()] * 300)
    wait_for(lambda: all(s.available == 0 and s.running == 0
                         for s in app.store.jobs.queues_stats(include_finished=False)),
             timeout=60, what="the worker learned its jobs are short")
    blockers = [rec_app.ahead_block.enqueue(block).id for _ in range(2)]
    wait_for(lambda: all(app.get_job(b).state is JobState.RUNNING for b in blockers),
             timeout=30, what="both slots busy")
    app.send_event(job_id, "go", {"ok": True})
    wait_for(lambda: app.get_job(job_id).state is JobState.RUNNING, timeout=60,
             what="the workflow's run claimed ahead")
    assert effects_by_job(rec_app).get(job_id, []) == ["a"], "it has not begun"
    return worker, job_id


def _phases(rec_app: Any, job_id: int) -> Counter[str]:
    return Counter(effects_by_job(rec_app).get(job_id, []))


def test_last_attempt_lost_before_it_began_still_runs_and_compensates(
        rec_app: Any, db: dict[str, str]) -> None:
    app = rec_app.app
    worker, job_id = _claimed_ahead(rec_app, db, rec_app.ahead_once, True, 60)
    before = app.get_job(job_id)
    assert (before.counted_attempt, before.max_attempts) == (1, 1)  # its last attempt
    worker.send_signal(signal.SIGKILL)
    worker.wait()
    fresh = spawn_worker(db, "recording", ["ahead=2"])
    try:
        wait_for(lambda: app.get_job(job_id).state in (JobState.DEAD, JobState.SUCCEEDED),
                 timeout=60, what="the workflow ended")
    finally:
        _stop(fresh)
    job, run = app.get_job(job_id), app.get_workflow(job_id)
    assert (job.state, run.status) == (JobState.DEAD, "compensated"), (job, run)
    assert _phases(rec_app, job_id) == Counter({"a": 1, "c": 1, "undo-a": 1})
    assert job.errors[0]["kind"] == "lease_expired"
    # the suspension and the lost run were not counted; deciding to compensate gave the
    # job its compensation budget (runner.COMPENSATION_ATTEMPTS)
    assert (job.attempt, job.uncounted, job.counted_attempt) == (3, 2, 1)


@pytest.mark.parametrize("kill", [True, False], ids=["killed", "not-killed"])
def test_cancel_of_a_run_claimed_ahead_compensates(rec_app: Any, db: dict[str, str],
                                                   kill: bool) -> None:
    app = rec_app.app
    worker, job_id = _claimed_ahead(rec_app, db, rec_app.ahead_saga, False,
                                    60 if kill else 3)
    fresh = None
    try:
        app.cancel_job(job_id)
        if kill:
            worker.send_signal(signal.SIGKILL)
            worker.wait()
            fresh = spawn_worker(db, "recording", ["ahead=2"])
        wait_for(lambda: app.get_job(job_id).state is JobState.CANCELLED, timeout=60,
                 what="the workflow cancelled")
    finally:
        _stop(worker)
        if fresh is not None:
            _stop(fresh)
    assert app.get_workflow(job_id).status == "cancelled"
    assert _phases(rec_app, job_id) == Counter({"a": 1, "undo-a": 1})  # c never ran
