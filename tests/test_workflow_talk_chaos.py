"""An update across a worker killed with SIGKILL between its delivery and its result.

The worker process dies at the boundary under test (once); a fresh worker takes the
workflow up after its lease expires. The caller, blocked in ``handle.update`` all along,
gets the one result; the update is resolved once, recorded as one step.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections import Counter
from typing import Any

import pytest

from shiftwork import JobState
from shiftwork.workflow import UpdateRejected

from .conftest import spawn_worker
from .test_workflow_chaos import effects_by_job

pytestmark = pytest.mark.chaos

#: boundary -> how many times the handler runs (twice where the crash came after it ran
#: and before its resolution committed)
CASES = {"before:update:double:handle": 1, "before:update:double:accepted": 2,
         "after:update:double:accepted": 1}


def _run_until(done: Any, db: dict[str, str], deadline: float) -> int:
    """Keep one worker of one slot alive (respawned after each kill) until ``done()``: a
    kill must not also interrupt another workflow between its handler and its record."""
    workers: list[subprocess.Popen[bytes]] = []
    kills = 0
    try:
        while not done():
            assert time.monotonic() < deadline, "did not finish in time"
            for w in [w for w in workers if w.poll() is not None]:
                assert w.returncode == -9, f"worker exited with {w.returncode}, not SIGKILL"
                workers.remove(w)
                kills += 1
            if not workers:
                workers.append(spawn_worker(db, "recording", ["talk=1"],
                                            env={"SHIFTWORK_TEST_CRASHES": "1",
                                                 "SHIFTWORK_TEST_SIGKILL": "1"}))
            time.sleep(0.1)
    finally:
        for w in workers:
            w.kill()
            w.wait()
    return kills


def test_an_update_survives_a_killed_worker_exactly_once(rec_app: Any,
                                                         db: dict[str, str]) -> None:
    app = rec_app.app
    jobs = {rec_app.talker.enqueue(label).id: label for label in CASES}
    results: dict[int, Any] = {}

    def call(job_id: int, n: int) -> None:
        try:
            results[job_id] = app.job(job_id).update("double", {"n": n}, timeout=90)
        except BaseException as exc:  # handed to the test
            results[job_id] = exc

    callers = [threading.Thread(target=call, args=(j, i + 1), daemon=True)
               for i, j in enumerate(jobs)]
    for t in callers:
        t.start()
    kills = _run_until(lambda: all(app.get_job(j).state is JobState.SUCCEEDED for j in jobs)
                       and not any(t.is_alive() for t in callers),
                       db, time.monotonic() + 120)
    assert kills == len(CASES)
    effects = effects_by_job(rec_app)
    for i, (job_id, label) in enumerate(jobs.items()):
        n = i + 1
        assert results[job_id] == {"doubled": 2 * n}, (label, results[job_id])
        phases = Counter(p for p in effects[job_id] if not p.startswith("crash:"))
        assert phases == Counter({f"handle:{n}": CASES[label]}), (label, phases)
        assert effects[job_id].count(f"crash:{label}") == 1, label
        [update] = app.workflows.updates(job_id)  # resolved once
        assert (update.status, update.result, update.step) == (
            "accepted", {"doubled": 2 * n}, "update:double"), label
        assert [s.name for s in app.workflow_history(job_id)] == ["update:double"]
        assert app.get_job(job_id).result == {"doubled": 2 * n}
        assert app.workflows.query(job_id, "phase") == "done"


def test_a_rejection_survives_a_killed_worker_exactly_once(rec_app: Any,
                                                           db: dict[str, str]) -> None:
    app = rec_app.app
    job_id = rec_app.talker.enqueue("before:update:double:rejected").id
    box: dict[str, Any] = {}

    def call() -> None:
        try:
            box["result"] = app.job(job_id).update("double", {"n": -1}, timeout=90)
        except BaseException as exc:
            box["error"] = exc

    caller = threading.Thread(target=call, daemon=True)
    caller.start()
    kills = _run_until(lambda: not caller.is_alive(), db, time.monotonic() + 120)
    assert kills == 1
    assert isinstance(box.get("error"), UpdateRejected), box
    assert box["error"].message == "n must not be negative"
    [update] = app.workflows.updates(job_id)
    assert update.status == "rejected"
    phases = [p for p in effects_by_job(rec_app)[job_id] if not p.startswith("crash:")]
    assert phases == ["handle:-1", "handle:-1"]  # the handler ran again after the kill
    assert app.workflow_history(job_id)[0].status == "waiting"  # still waiting for one
