"""Our side: ``python -m benchmarks.workflows.ours FIGURE --schema S [...]``.

The app module is this file: worker processes load ``benchmarks.workflows.ours:app``.
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import time
from typing import Any

from shiftwork import App, JobState, Settings, Workflow
from shiftwork.testing import drain

from .common import CONCURRENCY, PG, STEPS, emit, median, rate

SCHEMA = os.environ.get("WF_BENCH_SCHEMA", "wf_bench")
app = App(PG, schema=SCHEMA, settings=Settings(poll_interval=1.0))
_marks: list[float] = []


def noop(i: int) -> int:
    return i


def mark() -> float:
    now = time.perf_counter()
    _marks.append(now)
    return now


def wall() -> float:
    return time.time()


@app.workflow(name="bench.ten", queue="wf")
def ten(wf: Workflow) -> None:
    for i in range(STEPS):
        wf.step(f"s{i}", noop, i)


@app.workflow(name="bench.first", queue="wf")
def first(wf: Workflow) -> float:
    return float(wf.step("first", wall))


@app.workflow(name="bench.many", queue="inline")
def many(wf: Workflow, n: int) -> None:
    for i in range(n):
        wf.step(f"s{i}", mark)


@app.workflow(name="bench.resumable", queue="inline")
def resumable(wf: Workflow, n: int) -> int:
    for i in range(n):
        wf.step(f"s{i}", noop, i)
    wf.wait_for_event("go")
    return int(wf.step("last", noop, n))


def _workers(count: int) -> list[subprocess.Popen[bytes]]:
    env = {**os.environ, "WF_BENCH_SCHEMA": SCHEMA}
    return [subprocess.Popen(
        [sys.executable, "-m", "shiftwork.cli", "worker", "benchmarks.workflows.ours:app",
         "-q", f"wf={CONCURRENCY}", "--log-level", "WARNING"], env=env)
        for _ in range(count)]


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        p.wait(30)


def _wait(pred: Any, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise RuntimeError("timed out")
        time.sleep(0.01)


def throughput(workers: int, n: int) -> dict[str, Any]:
    jobs = [r.id for r in ten.enqueue_many([()] * n)]
    procs = _workers(workers)
    try:
        _wait(lambda: sum(s.succeeded + s.dead for s in app.queue_stats()
                          if s.queue == "wf") >= n)
    finally:
        _stop(procs)
    finished = [app.get_job(j).finished_at for j in jobs]
    return {"workflows_per_s": rate([f.timestamp() for f in finished if f])}


def latency(samples: int) -> dict[str, Any]:
    procs = _workers(1)
    out = []
    try:
        first.enqueue()  # the worker is up and warm
        _wait(lambda: any(s.succeeded for s in app.queue_stats() if s.queue == "wf"))
        time.sleep(1.0)
        for _ in range(samples):
            t0 = time.time()
            job_id = first.enqueue().id
            _wait(lambda j=job_id: app.get_job(j).state is JobState.SUCCEEDED)
            out.append(float(app.get_job(job_id).result) - t0)
            time.sleep(0.05)
    finally:
        _stop(procs)
    return {"first_step_ms": median(out) * 1000}


def step_overhead(n: int) -> dict[str, Any]:
    for _ in range(2):  # the second, warm
        _marks.clear()
        many.enqueue(n)
        drain(app, ["inline"])
    gaps = [b - a for a, b in itertools.pairwise(_marks)]
    return {"step_ms": median(gaps) * 1000}


def resume(n: int) -> dict[str, Any]:
    job = resumable.enqueue(n)
    drain(app, ["inline"])
    assert app.get_job(job.id).state is JobState.SCHEDULED
    t0 = time.perf_counter()
    app.send_event(job.id, "go", {})
    drain(app, ["inline"])
    took = time.perf_counter() - t0
    assert app.get_job(job.id).state is JobState.SUCCEEDED
    return {f"resume_{n}_ms": took * 1000}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("figure", choices=["throughput", "latency", "steps", "resume"])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("-n", type=int, default=500)
    args = parser.parse_args()
    app.migrate()
    if args.figure == "throughput":
        emit(throughput(args.workers, args.n))
    elif args.figure == "latency":
        emit(latency(args.n))
    elif args.figure == "steps":
        emit(step_overhead(args.n))
    else:
        emit(resume(args.n))


if __name__ == "__main__":
    main()
