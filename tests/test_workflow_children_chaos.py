"""Child workflows and parallel calls with real worker processes that really die: at
every durable write of the parent, of the child and of a parallel call (and between a
member's report to its parent and its job's completion). Every family must end with the
right result, and no child or call may ever be enqueued twice."""

from __future__ import annotations

import subprocess
import time
from collections import Counter
from typing import Any

import pytest

from shiftwork import JobState

from .conftest import spawn_worker

pytestmark = pytest.mark.chaos

PARENT = [f"{when}:{step}:{status}" for step in ("child:kid", "parallel:x,y")
          for status in ("waiting", "done") for when in ("before", "after")]
KID = ["after:k1:done", "before:finish:succeeded", "after:finish:succeeded",
       "before:report", "after:report"]
BRANCH = ["in-call", "before:report", "after:report"]
FINISHED = (JobState.SUCCEEDED, JobState.DEAD, JobState.CANCELLED)


def test_family_survives_a_crash_in_parent_child_and_call(rec_app: Any,
                                                          db: dict[str, str]) -> None:
    app = rec_app.app
    cases: dict[int, tuple[str, str, str]] = {}
    for label in PARENT:
        cases[rec_app.family.enqueue(label, "", "").id] = (label, "", "")
    for label in KID:
        cases[rec_app.family.enqueue("", label, "").id] = ("", label, "")
    for label in BRANCH:
        cases[rec_app.family.enqueue("", "", label).id] = ("", "", label)
    workers: list[subprocess.Popen[bytes]] = []
    deaths = 0
    deadline = time.monotonic() + 180
    try:
        while not all(app.get_job(j).state in FINISHED for j in cases):
            assert time.monotonic() < deadline, [
                (cases[j], app.get_job(j).state) for j in cases
                if app.get_job(j).state not in FINISHED]
            for w in [w for w in workers if w.poll() is not None]:
                assert w.returncode == 17, f"worker exited with {w.returncode}, not a test crash"
                workers.remove(w)
                deaths += 1
            # One job per process: a crash kills only the job that asked for it (a
            # sibling killed between its record and its boundary would skip that point).
            while len(workers) < 4:
                workers.append(spawn_worker(db, "recording", ["family=1"],
                                            env={"SHIFTWORK_TEST_CRASHES": "1"}))
            time.sleep(0.1)
    finally:
        for w in workers:
            w.kill()
            w.wait()
    jobs = app.list_jobs(limit=10_000)
    crashes = Counter(p for ps in _effects(rec_app).values() for p in ps
                      if p.startswith("crash:"))
    want = Counter(f"crash:{label}" for label in [*PARENT, *KID, *BRANCH])
    missed = [fid for fid, case in cases.items()
              if any(f"crash:{c}" not in crashes for c in case if c)]
    assert crashes == want, [(cases[f], app.get_job(f).errors, app.workflow_history(f),
                              _effects(rec_app).get(f)) for f in missed]
    assert deaths >= len(want) - 3
    for family_id, case in cases.items():
        got = app.get_job(family_id)
        assert got.state is JobState.SUCCEEDED and got.result == [40, 2, 3], (case, got)
        members = Counter(j.task for j in jobs if f":wf{family_id}:" in (j.unique_key or ""))
        assert members == Counter({"kid": 1, "branch": 2}), (case, members)
    print(f"\n{len(cases)} families, {deaths} worker processes killed")


def _effects(module: Any) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for job_id, phase in module._conn().execute(
            f"SELECT job_id, phase FROM {module.effects_table()}").fetchall():
        out.setdefault(job_id, []).append(phase)
    return out
