"""Crash at every durable write of a saga, with real worker processes that really die.

Each saga (tests/apps/recording.py) names the boundary at which its worker must
``os._exit`` (once). A pool of worker processes, respawned as they die, runs every saga
to its end; then each is checked: its final state, and the exact multiset of its side
effects (each step and compensation at least once, a repeat only where the crash came
before the record, never a compensation without its step, never ``succeeded`` once a
compensation began).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections import Counter
from typing import Any

import pytest

from shiftwork import JobState

from .conftest import spawn_worker

pytestmark = pytest.mark.chaos

FAILING = [f"{when}:{what}" for what in (
    "a:done", "nap:sleeping", "nap:done", "b:done", "event:go:take", "decide:compensating",
    "compensate:b:done", "compensate:a:done", "finish:compensated") for when in ("before", "after")]
#: saga_once (max_attempts=1): the crash is on the last attempt -> what each run must do
LAST = {
    # the lost last attempt is the final failure: what ran is compensated, nothing more runs
    "after:a:done": Counter({"a": 1, "undo-a": 1}),
    # c failed on the last attempt and the decision was lost with its run: the rescue notes
    # the lost last attempt, and the next run compensates without running c again
    "before:decide:compensating": Counter({"a": 1, "b": 1, "c": 1, "undo-b": 1, "undo-a": 1}),
    "after:compensate:b:done": Counter({"a": 1, "b": 1, "c": 1, "undo-b": 1, "undo-a": 1}),
}
SUCCEEDING = [f"{when}:{what}" for what in ("c:done", "finish:succeeded")
              for when in ("before", "after")]


FINISHED = (JobState.SUCCEEDED, JobState.DEAD, JobState.CANCELLED)


def expected(label: str, fail: bool) -> Counter[str]:
    """Each effect once, plus one repeat where the crash came after it and before its record."""
    want = Counter({"a": 1, "b": 1, "c": 1})
    if fail:
        want.update({"undo-b": 1, "undo-a": 1})
    repeats = {"before:a:done": "a", "before:b:done": "b",
               "before:c:done": "c",  # succeeding: c ran, its record did not commit
               "before:decide:compensating": "c",  # failing: c failed, the decision did not commit
               "before:compensate:b:done": "undo-b", "before:compensate:a:done": "undo-a"}
    if label in repeats:
        want[repeats[label]] += 1
    return want


def effects_by_job(module: Any) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for job_id, phase in module._conn().execute(
            f"SELECT job_id, phase FROM {module.effects_table()}").fetchall():
        out.setdefault(job_id, []).append(phase)
    return out


def test_saga_survives_a_crash_at_every_boundary(rec_app: Any, db: dict[str, str]) -> None:
    app = rec_app.app
    cases = {}
    for label in FAILING:
        cases[rec_app.saga.enqueue(label, True).id] = (label, True)
    for label in SUCCEEDING:
        cases[rec_app.saga.enqueue(label, False).id] = (label, False)
    for job_id in cases:
        app.send_event(job_id, "go", {"ok": True}, key="go-1")
    # The last-attempt sagas run one at a time on a worker of their own, so each crash is
    # the one under test (a run claimed ahead and lost before it began is not counted:
    # tests/test_workflow_edges.py).
    todo = list(LAST)
    last: dict[int, str] = {}
    current: list[int] = []
    workers: list[subprocess.Popen[bytes]] = []
    last_worker: list[subprocess.Popen[bytes]] = []
    deaths = 0
    deadline = time.monotonic() + 120

    def finished() -> bool:
        return not todo and all(app.get_job(j).state in FINISHED for j in [*cases, *last])
    try:
        while not finished():
            assert time.monotonic() < deadline, "sagas did not finish in time"
            for w in [w for w in workers if w.poll() is not None]:
                assert w.returncode == 17, f"worker exited with {w.returncode}, not a test crash"
                workers.remove(w)
                deaths += 1
            while len(workers) < 3:
                workers.append(spawn_worker(db, "recording", ["saga=1"],
                                            env={"SHIFTWORK_TEST_CRASHES": "1"}))
            if last_worker and last_worker[0].poll() is not None:
                last_worker.clear()
            if not last_worker:
                last_worker.append(spawn_worker(db, "recording", ["saga_last=1"],
                                                env={"SHIFTWORK_TEST_CRASHES": "1"}))
            if todo and (not current or app.get_job(current[0]).state in FINISHED):
                label = todo.pop(0)
                current[:] = [rec_app.saga_once.enqueue(label, True).id]
                last[current[0]] = label
                app.send_event(current[0], "go", {"ok": True})
            time.sleep(0.1)
    finally:
        for w in workers + last_worker:
            w.kill()
            w.wait()
    effects = effects_by_job(rec_app)
    hit = {(j, p.removeprefix("crash:")) for j, ps in effects.items() for p in ps
           if p.startswith("crash:")}
    wanted = {(j, label) for j, (label, _) in cases.items()} | set(last.items())
    # every boundary was really hit, once
    assert hit == wanted, ([app.get_job(j) for j, _ in wanted - hit], hit - wanted)
    for job_id, label in last.items():
        phases = [p for p in effects.get(job_id, []) if not p.startswith("crash:")]
        assert Counter(phases) == LAST[label], (label, phases)
        assert app.get_job(job_id).state is JobState.DEAD, label
        assert app.get_workflow(job_id).status == "compensated", label
    for job_id, (label, fail) in cases.items():
        job = app.get_job(job_id)
        run = app.get_workflow(job_id)
        phases = [p for p in effects.get(job_id, []) if not p.startswith("crash:")]
        assert Counter(phases) == expected(label, fail), (label, phases)
        history = [s.name for s in app.workflow_history(job_id)]
        if fail:
            assert job.state is JobState.DEAD, (label, job.state)
            assert run.status == "compensated", (label, run)
            assert job.errors[-1]["type"].endswith("WorkflowCompensated"), (label, job.errors)
            # reverse order of the steps, each compensation after its step
            assert history.index("compensate:b") < history.index("compensate:a"), history
        else:
            assert job.state is JobState.SUCCEEDED and run.status == "succeeded", label
            assert job.result == "done"
    if os.environ.get("SHIFTWORK_CRASH_TABLE"):  # the table for the closing note
        with open(os.environ["SHIFTWORK_CRASH_TABLE"], "a") as out:
            for job_id, (label, _fail) in cases.items():
                phases = Counter(p for p in effects[job_id] if not p.startswith("crash:"))
                out.write(f"| {label} | {db['dsn'].split(':')[0]} | {app.get_job(job_id).state}"
                          f" / {app.get_workflow(job_id).status} | "
                          + ", ".join(f"{k}x{v}" for k, v in sorted(phases.items())) + " |\n")


def test_async_saga_survives_a_crash_at_every_boundary(rec_app: Any,
                                                       db: dict[str, str]) -> None:
    """The same matrix for an ``async def`` body (its durable calls run on threads, so
    the crash comes from a thread of the worker's event loop). One slot per worker, as
    above: a crash must not also interrupt another saga between its effect and record."""
    app = rec_app.app
    cases = {rec_app.asaga.enqueue(label, fail).id: (label, fail)
             for fail, labels in ((True, FAILING), (False, SUCCEEDING)) for label in labels}
    for job_id in cases:
        app.send_event(job_id, "go", {"ok": True}, key="go-1")
    workers: list[subprocess.Popen[bytes]] = []
    deadline = time.monotonic() + 120
    try:
        while not all(app.get_job(j).state in FINISHED for j in cases):
            assert time.monotonic() < deadline, "async sagas did not finish in time"
            for w in [w for w in workers if w.poll() is not None]:
                assert w.returncode == 17, f"worker exited with {w.returncode}, not a test crash"
                workers.remove(w)
            while len(workers) < 3:
                workers.append(spawn_worker(db, "recording", ["asaga=1"],
                                            env={"SHIFTWORK_TEST_CRASHES": "1"}))
            time.sleep(0.1)
    finally:
        for w in workers:
            w.kill()
            w.wait()
    effects = effects_by_job(rec_app)
    hit = {(j, p.removeprefix("crash:")) for j, ps in effects.items() for p in ps
           if p.startswith("crash:")}
    assert hit == {(j, label) for j, (label, _) in cases.items()}
    for job_id, (label, fail) in cases.items():
        job, run = app.get_job(job_id), app.get_workflow(job_id)
        phases = [p for p in effects.get(job_id, []) if not p.startswith("crash:")]
        assert Counter(phases) == expected(label, fail), (label, phases)
        if fail:
            assert (job.state, run.status) == (JobState.DEAD, "compensated"), (label, run)
        else:
            assert (job.state, run.status) == (JobState.SUCCEEDED, "succeeded"), label
    if os.environ.get("SHIFTWORK_CRASH_TABLE"):
        with open(os.environ["SHIFTWORK_CRASH_TABLE"], "a") as out:
            for job_id, (label, _fail) in cases.items():
                phases = Counter(p for p in effects[job_id] if not p.startswith("crash:"))
                out.write(f"| async {label} | {db['dsn'].split(':')[0]} | "
                          f"{app.get_job(job_id).state} / {app.get_workflow(job_id).status} | "
                          + ", ".join(f"{k}x{v}" for k, v in sorted(phases.items())) + " |\n")
