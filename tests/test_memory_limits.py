"""Memory ceilings (issue 35): a job past its ceiling fails alone, with MemoryLimitExceeded,
while its neighbours in the same worker succeed and the worker's own memory stays flat.

Real worker processes (``shiftwork worker``) on both engines, running tests/apps/memory.py;
memory read from /proc. The figures each test saw are printed (``pytest -s``)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from shiftwork import App, ConfigurationError, JobState
from shiftwork.core.memory import MB, MIN_MEMORY_LIMIT, parse_memory_limit

from .conftest import ROOT, imported_app, spawn_worker, wait_for
from .test_security import TOKEN, Served, login

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads process memory from /proc")

EXCEEDED = re.compile(r"^job (\d+) used more than 200 MB \(peak (\d+) MB\); ")


def _status(pid: int, field: str) -> int:
    """A VmRSS/VmHWM-style field of /proc/<pid>/status, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} for {pid}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def worker(db: dict[str, str], queues: list[str], extra: list[str] | None = None,
           log: Path | None = None) -> Iterator[subprocess.Popen[bytes]]:
    # A short grace: a job still running at the end is handed back and its child killed
    # (a worker killed outright would leave its children behind).
    proc = spawn_worker(db, "memory", queues, ["--grace", "2", *(extra or [])], log_path=log)
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def _cli(db: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'src'}",
           "SHIFTWORK_TEST_DSN": db["dsn"], "SHIFTWORK_TEST_SCHEMA": db["schema"],
           "SHIFTWORK_APP": "tests.apps.memory:app", "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "shiftwork.cli", *args], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=60)


def _final(app: App, job_id: int) -> Any:
    job = app.get_job(job_id)
    return job if job.state in (JobState.SUCCEEDED, JobState.DEAD, JobState.CANCELLED) else None


def test_a_job_past_its_ceiling_fails_alone(db: dict[str, str], monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    """1 GB under a 200 MB ceiling: each attempt fails with MemoryLimitExceeded and the job
    dies after its two attempts; a neighbour in the same worker process and a limited job
    that stays under its ceiling succeed; the worker's own peak RSS does not move; the
    per-task metric counts both attempts; `jobs show` and the dashboard show the peaks."""
    port = _free_port()
    with imported_app(monkeypatch, "memory", db["dsn"], db["schema"]) as m:
        app = m.app
        warm = [m.neighbour.enqueue(i) for i in range(3)] + [m.modest.enqueue(0)]
        with worker(db, ["mem=4"], ["--metrics-port", str(port)], tmp_path / "w.log") as w:
            for h in warm:
                wait_for(lambda h=h: _final(app, h.id), timeout=60, what="warm-up jobs")
            before = _status(w.pid, "VmHWM")
            hog = m.hog.enqueue(1024)
            beside = m.neighbour.enqueue(99, 1.0)  # runs while the hog grows
            modest = m.modest.enqueue(1)
            dead = wait_for(lambda: _final(app, hog.id), timeout=90, what="the hog to end")
            done = wait_for(lambda: _final(app, beside.id), timeout=60, what="the neighbour")
            fine = wait_for(lambda: _final(app, modest.id), timeout=60, what="modest")
            after = _status(w.pid, "VmHWM")
            assert w.poll() is None, "the worker itself must survive"
            metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                             timeout=10).read().decode()
    print(f"\nworker VmHWM before {before / MB:.1f} MB, after {after / MB:.1f} MB; "
          f"hog peaks {[e.get('peak_rss', 0) // MB for e in dead.errors]} MB; "
          f"modest peak {(fine.peak_rss or 0) / MB:.1f} MB; {[e['message'] for e in dead.errors]}")

    assert dead.state is JobState.DEAD and dead.counted_attempt == 2
    assert [e["type"] for e in dead.errors] == ["shiftwork.core.errors.MemoryLimitExceeded"] * 2
    assert [e["kind"] for e in dead.errors] == ["memory_limit"] * 2
    for err in dead.errors:
        match = EXCEEDED.match(err["message"])
        assert match, err["message"]
        assert int(match.group(1)) == hog.id
        assert 0 < err["peak_rss"] <= 200 * MB + 64 * MB  # stopped near its ceiling, not at 1 GB
    assert dead.peak_rss == dead.errors[-1]["peak_rss"]

    assert done.state is JobState.SUCCEEDED and done.result["pid"] == w.pid  # same worker
    assert fine.state is JobState.SUCCEEDED and fine.result["pid"] != w.pid  # in a child
    assert fine.peak_rss is not None and fine.peak_rss >= 20 * MB
    assert fine.attempt_peaks == [(1, fine.peak_rss)]
    # The gigabyte was never the worker's: its own high-water mark stayed where it was.
    assert after - before < 30 * MB, (before, after)

    assert ('shiftwork_jobs_memory_limited_total{queue="mem",task="tests.apps.memory.hog"} 2.0'
            in metrics)
    assert 'shiftwork_jobs_memory_limited_total{queue="mem",task="tests.apps.memory.modest"}' \
        not in metrics

    shown = _cli(db, "jobs", "show", str(hog.id))
    assert shown.returncode == 0, shown.stderr
    peaks = ", ".join(f"attempt {e['attempt']} {round(e['peak_rss'] / MB)} MB"
                      for e in dead.errors)
    assert f"peak memory: {peaks}" in shown.stdout
    assert "MemoryLimitExceeded: job" in shown.stdout

    from shiftwork.web import create_dashboard

    with imported_app(monkeypatch, "memory", db["dsn"], db["schema"]) as m2, \
            Served(create_dashboard(m2.app, token=TOKEN)) as served, served.client() as c:
        login(c)
        page = c.get(f"/jobs/{hog.id}").text
        ok_page = c.get(f"/jobs/{modest.id}").text
    assert f'<dd id="peak-memory">attempt {dead.errors[0]["attempt"]}: ' in page
    assert f"peak {round(dead.errors[0]['peak_rss'] / MB)} MB" in page
    assert f"attempt 1: {round(fine.peak_rss / MB)} MB" in ok_page


def test_the_watch_stops_memory_the_rlimit_does_not_count(
        db: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A shared mapping is resident but not data segment, so RLIMIT_DATA lets it grow: the
    parent's RSS watch kills the child past 200 MB, long before its 600 s sleep ends (with
    the watch switched off, rss.can_sample() False, this test was seen timing out)."""
    with imported_app(monkeypatch, "memory", db["dsn"], db["schema"]) as m:
        app = m.app
        job = m.shared_hog.enqueue(400, 600.0)
        beside = m.neighbour.enqueue(1)
        with worker(db, ["mem=2"]) as w:
            dead = wait_for(lambda: _final(app, job.id), timeout=90, what="the watch")
            ok = wait_for(lambda: _final(app, beside.id), timeout=60, what="the neighbour")
            assert w.poll() is None
    err = dead.errors[-1]
    print(f"\nwatch: killed at peak {err['peak_rss'] / MB:.1f} MB (ceiling 200 MB)")
    assert dead.state is JobState.DEAD and err["kind"] == "memory_limit"
    assert EXCEEDED.match(err["message"]) and err["message"].endswith(
        "its process was killed"), err["message"]
    assert err["peak_rss"] > 200 * MB  # seen past its ceiling (by how much: the sampling)
    assert ok.state is JobState.SUCCEEDED


def test_a_calls_ceiling_and_a_queues_ceiling(db: dict[str, str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """`-q plain=2:process:150MB` limits every job of the queue; `using(memory_limit=...)`
    gives one call its own, which wins over the queue's."""
    with imported_app(monkeypatch, "memory", db["dsn"], db["schema"]) as m:
        app = m.app
        over = m.grows.using(max_attempts=1).enqueue(400)  # the queue's 150 MB
        under = m.grows.enqueue(30)
        roomy = m.grows.using(memory_limit="600MB").enqueue(300)  # its own ceiling
        tight = m.grows.using(memory_limit="120MB", max_attempts=1).enqueue(200)
        with worker(db, ["plain=2:process:150MB"]):
            results = {h.id: wait_for(lambda h=h: _final(app, h.id), timeout=90)
                       for h in (over, under, roomy, tight)}
    assert results[under.id].state is JobState.SUCCEEDED
    assert results[roomy.id].state is JobState.SUCCEEDED
    assert results[roomy.id].peak_rss > 150 * MB  # past the queue's: the call's ceiling won
    for job, ceiling in ((over, "150 MB"), (tight, "120 MB")):
        last = results[job.id].errors[0]
        assert last["kind"] == "memory_limit"
        assert last["message"].startswith(f"job {job.id} used more than {ceiling} (peak ")


@pytest.mark.parametrize("value, problem", [
    ("lots", "is not a size"), (0, "must be more than 0"), (-1, "must be more than 0"),
    ("-5MB", "is not a size"), ("50MB", "below 100 MB"), (True, "must be a size"),
    (1.5, "must be a size"), ("12 parsecs", "is not a size"),
])
def test_bad_values_are_refused_at_declaration(tmp_path: Path, value: Any,
                                               problem: str) -> None:
    app = App(f"sqlite:///{tmp_path / 'jobs.db'}")
    app.migrate()

    @app.task(queue="ok")
    def fine() -> None: ...

    try:
        with pytest.raises(ConfigurationError, match=re.escape(problem)) as declared:
            @app.task(queue="mem", memory_limit=value)
            def greedy() -> None: ...
        assert "memory_limit" in str(declared.value)
        assert not any(t.endswith("greedy") for t in app.tasks)
        with pytest.raises(ConfigurationError, match=re.escape(problem)):
            fine.using(memory_limit=value).enqueue()
        assert app.store.jobs.list() == []  # nothing inserted
    finally:
        app.close()


def test_sizes_parse() -> None:
    assert parse_memory_limit("512MB", "t") == 512 * MB
    assert parse_memory_limit("1.5GB", "t") == 1536 * MB
    assert parse_memory_limit(" 200 m ", "t") == 200 * MB
    assert parse_memory_limit("1GiB", "t") == 1024 * MB
    assert parse_memory_limit(MIN_MEMORY_LIMIT, "t") == MIN_MEMORY_LIMIT
    assert parse_memory_limit(None, "t") is None


@pytest.mark.parametrize("spec, problem", [
    ("mem=2:process:lots", "is not a size"),
    ("mem=2:thread:512MB", "a memory ceiling needs the process executor"),
    ("mem=2:process:10MB", "below 100 MB"),
])
def test_bad_queue_ceilings_are_refused(tmp_path: Path, spec: str, problem: str) -> None:
    db = {"dsn": f"sqlite:///{tmp_path / 'jobs.db'}", "schema": "shiftwork"}
    r = _cli(db, "worker", "tests.apps.memory:app", "-q", spec)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert problem in r.stderr and "--queue" in r.stderr


def _report_peak(queue: Any) -> None:
    from shiftwork.worker import rss

    queue.put(rss.own_peak())


def test_a_childs_reported_peak_is_its_own_not_its_parents() -> None:
    """A spawned child's ru_maxrss keeps the high-water mark of the forked copy it
    replaced at exec, its parent's size (a child of a 600 MB process reported 611 MB, its
    own VmHWM 29 MB), so a child reports VmHWM on Linux. Seen failing with ru_maxrss."""
    import multiprocessing

    ballast = b"x" * (200 * MB)  # this process: 200 MB more resident
    spawn = multiprocessing.get_context("spawn")
    queue = spawn.Queue()
    child = spawn.Process(target=_report_peak, args=(queue,))
    child.start()
    peak = queue.get(timeout=60)
    child.join(30)
    assert len(ballast) == 200 * MB
    print(f"\na spawned child's own peak: {peak / MB:.1f} MB "
          f"(parent {_status(os.getpid(), 'VmRSS') / MB:.0f} MB)")
    assert 0 < peak < 100 * MB
