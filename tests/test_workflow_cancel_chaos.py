"""Cancel reaches a workflow wherever it is, with a real worker process running it.

Sleeping, waiting for an event, inside a step, between two steps (in plain body code),
and compensating: the cancel is raised at the workflow's next durable call, the
compensations of the steps that completed run once each in reverse, and it ends
``cancelled`` (a workflow already compensating finishes and ends ``compensated``).
The in-process versions are in tests/test_workflow_guarantees.py.
"""

from __future__ import annotations

import subprocess
from collections import Counter
from typing import Any

import pytest

from shiftwork import JobState

from .conftest import spawn_worker, wait_for
from .test_workflow_chaos import effects_by_job

pytestmark = pytest.mark.chaos

FINISHED = (JobState.SUCCEEDED, JobState.DEAD, JobState.CANCELLED)


def _history(app: Any, job_id: int) -> dict[str, str]:
    return {s.name: str(s.status) for s in app.workflow_history(job_id)}


#: position -> (what to wait for before cancelling, the effects it must end with)
POSITIONS: dict[str, tuple[str, Counter[str]]] = {
    "sleep": ("nap", Counter({"a": 1, "undo-a": 1})),
    "wait": ("event:go", Counter({"a": 1, "undo-a": 1})),
    # the step finishes (Python cannot stop it), is recorded, and is compensated too
    "step": ("effect:slow", Counter({"a": 1, "slow": 1, "undo-slow": 1, "undo-a": 1})),
    "between": ("effect:a", Counter({"a": 1, "undo-a": 1})),
}


@pytest.mark.parametrize("where", list(POSITIONS))
def test_cancel_in_each_position_compensates(rec_app: Any, db: dict[str, str],
                                             where: str) -> None:
    app = rec_app.app
    marker, want = POSITIONS[where]
    job_id = rec_app.cancellable.enqueue(where).id
    worker: subprocess.Popen[bytes] = spawn_worker(db, "recording", ["saga=1"])
    try:
        if marker.startswith("effect:"):
            phase = marker.removeprefix("effect:")
            wait_for(lambda: phase in effects_by_job(rec_app).get(job_id, []), timeout=30,
                     what=f"the workflow in {where}")
        else:
            wait_for(lambda: marker in _history(app, job_id)
                     and app.get_job(job_id).state is JobState.SCHEDULED, timeout=30,
                     what=f"the workflow suspended in {where}")
        app.cancel_job(job_id)
        wait_for(lambda: app.get_job(job_id).state in FINISHED, timeout=30,
                 what="the workflow ended")
    finally:
        worker.kill()
        worker.wait()
    assert app.get_job(job_id).state is JobState.CANCELLED, app.get_job(job_id).errors
    assert app.get_workflow(job_id).status == "cancelled"
    effects = effects_by_job(rec_app)[job_id]
    assert Counter(effects) == want, effects
    undos = [e for e in effects if e.startswith("undo")]
    assert undos == sorted(undos, key=lambda e: -effects.index(e.removeprefix("undo-")))
    assert "b" not in effects  # nothing after the cancel ran


def test_cancel_while_compensating_lets_compensation_finish(rec_app: Any,
                                                            db: dict[str, str]) -> None:
    app = rec_app.app
    job_id = rec_app.failing_slow_undo.enqueue().id
    worker = spawn_worker(db, "recording", ["saga=1"])
    try:
        wait_for(lambda: "undo-a-start" in effects_by_job(rec_app).get(job_id, []),
                 timeout=30, what="the compensation running")
        app.cancel_job(job_id)
        wait_for(lambda: app.get_job(job_id).state in FINISHED, timeout=30,
                 what="the workflow ended")
    finally:
        worker.kill()
        worker.wait()
    assert app.get_job(job_id).state is JobState.DEAD
    assert app.get_workflow(job_id).status == "compensated"
    assert Counter(effects_by_job(rec_app)[job_id]) == Counter(
        {"a": 1, "b": 1, "undo-a-start": 1, "undo-a": 1})
