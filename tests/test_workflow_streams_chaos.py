"""Streams and forks with real worker processes killed by SIGKILL (tests/apps/streaming.py).

A worker dies right before a stream value's commit and right after it, a few times per
workflow, while a reader in this process follows the stream: the reader gets every value
once, in order. A process forking a workflow dies inside the fork's transaction: no fork
exists and the original is untouched; a worker running a fork dies in its first new step:
the fork ends with the steps before the fork point never run again.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shiftwork import JobState

from .conftest import ROOT, imported_app, spawn_worker

pytestmark = pytest.mark.chaos

N = 12
CRASHES = ["before:stream:out:2:done", "after:stream:out:2:done", "before:stream:out:5:done",
           "after:stream:out:8:done", "before:stream:out:close:done"]


@pytest.fixture
def streaming(db: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with imported_app(monkeypatch, "streaming", db["dsn"], db["schema"]) as module:
        module.create_effects_table()
        yield module


def _respawning(db: dict[str, str], env: dict[str, str], done: Any, timeout: float = 90
                ) -> int:
    """Run worker processes, one at a time, respawned as they die, until ``done()``;
    returns how many died (each by its own SIGKILL)."""
    deaths = 0
    worker: subprocess.Popen[bytes] | None = None
    deadline = time.monotonic() + timeout
    try:
        while not done():
            assert time.monotonic() < deadline, "the workflows did not finish in time"
            if worker is not None and worker.poll() is not None:
                assert worker.returncode == -9, f"worker exited with {worker.returncode}"
                deaths += 1
                worker = None
            if worker is None:
                worker = spawn_worker(db, "streaming", ["default"], env=env)
            time.sleep(0.05)
    finally:
        if worker is not None:
            worker.kill()
            worker.wait()
    return deaths


def test_a_worker_killed_during_stream_writes_loses_and_repeats_nothing(
        streaming: Any, db: dict[str, str], tmp_path: Path) -> None:
    app = streaming.app
    job = streaming.stream_out.enqueue(N)
    got: list[Any] = []
    reader = threading.Thread(target=lambda: got.extend(job.read_stream("out", timeout=60)))
    reader.start()
    env = {"SHIFTWORK_TEST_CRASH_AT": ",".join(CRASHES), "SHIFTWORK_TEST_MARKS": str(tmp_path)}
    deaths = _respawning(db, env, lambda: app.get_job(job.id).state is JobState.SUCCEEDED)
    reader.join(30)
    assert not reader.is_alive()
    assert deaths == len(CRASHES)
    assert got == [f"make-{i}" for i in range(N)]  # each value once, in order
    assert list(job.read_stream("out")) == got
    # a crash after a step's record never runs it again; none here came between a step and
    # its record, so each step ran exactly once
    assert sorted(streaming.effects(job.id)) == sorted(f"make-{i}" for i in range(N))


FORK_SCRIPT = """
import os, signal, sys
from shiftwork.workflow import set_boundary_hook
from tests.apps import streaming
set_boundary_hook(lambda wid, label: label == "before:fork:commit"
                  and os.kill(os.getpid(), signal.SIGKILL))
streaming.app.workflows.fork(int(sys.argv[1]), from_step="transform")
"""


def test_a_fork_killed_before_its_commit_leaves_nothing_and_a_killed_fork_run_resumes(
        streaming: Any, db: dict[str, str], tmp_path: Path) -> None:
    app = streaming.app
    job = streaming.pipeline.enqueue("p")
    env = {"SHIFTWORK_TEST_MARKS": str(tmp_path)}
    _respawning(db, env, lambda: app.get_job(job.id).state is JobState.SUCCEEDED)
    history = [(s.name, s.result) for s in app.workflow_history(job.id)]
    jobs_before = len(app.store.jobs.list(limit=100))

    proc = subprocess.run(
        [sys.executable, "-c", FORK_SCRIPT, str(job.id)], cwd=ROOT, timeout=60,
        env={**os.environ, "SHIFTWORK_TEST_DSN": db["dsn"],
             "SHIFTWORK_TEST_SCHEMA": db["schema"],
             "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}, capture_output=True)
    assert proc.returncode == -9, proc.stderr
    assert len(app.store.jobs.list(limit=100)) == jobs_before  # no half-made fork
    assert [(s.name, s.result) for s in app.workflow_history(job.id)] == history

    fork = app.workflows.fork(job.id, from_step="transform")
    env["SHIFTWORK_TEST_CRASH_AT"] = "after:transform:done,before:load:done"
    deaths = _respawning(db, env, lambda: app.get_job(fork.id).state is JobState.SUCCEEDED)
    assert deaths == 2
    assert app.get_job(fork.id).result == ["p", "extract", "transform", "load"]
    # extract was kept from the original; transform ran once (the crash came after its
    # record); load ran twice (the crash came before its record)
    assert sorted(streaming.effects(fork.id)) == ["load", "load", "transform"]
    assert [(s.name, s.result) for s in app.workflow_history(job.id)] == history
