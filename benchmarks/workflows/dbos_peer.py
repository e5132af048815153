"""DBOS Transact's side: ``python -m benchmarks.workflows.dbos_peer FIGURE --schema S``.

Runs in the peers' virtualenv (the ``bench`` extra). Its documented best set-up for this:
Postgres as the system database (the same server and database as ours, its own schema),
a queue with ``worker_concurrency`` equal to our per-process concurrency and a short
``polling_interval_sec`` (the default 1 s would dominate latency), steps as
``@DBOS.step()`` functions, workflows started through ``DBOSClient.enqueue`` onto the queue
(as a separate producer process would), and each worker a process that ``DBOS.launch()``es.
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import time
from typing import Any

from dbos import DBOS, DBOSClient, DBOSConfig, EnqueueOptions

from .common import CONCURRENCY, PG, STEPS, emit, median, rate

SCHEMA = os.environ.get("WF_BENCH_SCHEMA", "wf_bench_dbos")
VERSION = "bench"
POLL = 0.05
_marks: list[float] = []


def config() -> DBOSConfig:
    return {"name": "wf-bench", "system_database_url": PG, "dbos_system_schema": SCHEMA,
            "application_version": VERSION, "log_level": "WARNING"}


@DBOS.step()
def noop(i: int) -> int:
    return i


@DBOS.step()
def mark() -> float:
    now = time.perf_counter()
    _marks.append(now)
    return now


@DBOS.step()
def wall() -> float:
    return time.time()


_cancel = {"once": True}


@DBOS.step()
def cancel_self() -> None:
    # DBOS does not record a step that saw its workflow cancelled: cancel once only
    if _cancel.pop("once", False):
        DBOS.cancel_workflow(DBOS.workflow_id)  # type: ignore[arg-type]


@DBOS.workflow()
def ten() -> None:
    for i in range(STEPS):
        noop(i)


@DBOS.workflow()
def first() -> float:
    return float(wall())


@DBOS.workflow()
def many(n: int) -> None:
    for _ in range(n):
        mark()


@DBOS.workflow()
def resumable(n: int) -> int:
    for i in range(n):
        noop(i)
    cancel_self()  # stops here; the resumed run replays the n steps and goes on
    return int(noop(n))


def _client() -> DBOSClient:
    return DBOSClient(system_database_url=PG, dbos_system_schema=SCHEMA)


def _enqueue(client: DBOSClient, name: str) -> Any:
    return client.enqueue(EnqueueOptions(workflow_name=name, queue_name="wf",
                                         app_version=VERSION))


def _workers(count: int) -> list[subprocess.Popen[bytes]]:
    env = {**os.environ, "WF_BENCH_SCHEMA": SCHEMA}
    return [subprocess.Popen([sys.executable, "-m", "benchmarks.workflows.dbos_peer", "worker"],
                             env=env) for _ in range(count)]


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        p.wait(30)


def _finished(client: DBOSClient, n: int) -> list[float]:
    done = client.list_workflows(status="SUCCESS", name="ten", limit=n + 10)
    return [w.updated_at / 1000 for w in done if w.updated_at]


def throughput(workers: int, n: int) -> dict[str, Any]:
    client = _client()
    for _ in range(n):
        _enqueue(client, "ten")
    procs = _workers(workers)
    try:
        deadline = time.monotonic() + 600
        while len(client.list_workflows(status="SUCCESS", name="ten", limit=n + 10)) < n:
            if time.monotonic() > deadline:
                raise RuntimeError("timed out")
            time.sleep(0.2)
    finally:
        _stop(procs)
    return {"workflows_per_s": rate(_finished(client, n))}


def latency(samples: int) -> dict[str, Any]:
    client = _client()
    procs = _workers(1)
    out = []
    try:
        _enqueue(client, "first").get_result()  # the worker is up and warm
        time.sleep(1.0)
        for _ in range(samples):
            t0 = time.time()
            handle = _enqueue(client, "first")
            out.append(float(handle.get_result()) - t0)
            time.sleep(0.05)
    finally:
        _stop(procs)
    return {"first_step_ms": median(out) * 1000}


def step_overhead(n: int) -> dict[str, Any]:
    DBOS(config=config())
    DBOS.launch()
    for _ in range(2):  # the second, warm
        _marks.clear()
        many(n)
    gaps = [b - a for a, b in itertools.pairwise(_marks)]
    DBOS.destroy()
    return {"step_ms": median(gaps) * 1000}


def resume(n: int) -> dict[str, Any]:
    DBOS(config=config())
    DBOS.launch()
    handle = DBOS.start_workflow(resumable, n)
    deadline = time.monotonic() + 600
    while handle.get_status().status != "CANCELLED":
        if time.monotonic() > deadline:
            raise RuntimeError("timed out")
        time.sleep(0.01)
    t0 = time.perf_counter()
    result = DBOS.resume_workflow(handle.workflow_id).get_result()
    took = time.perf_counter() - t0
    assert result == n
    DBOS.destroy()
    return {f"resume_{n}_ms": took * 1000}


def _queue() -> None:
    DBOS.register_queue("wf", worker_concurrency=CONCURRENCY, polling_interval_sec=POLL)


def worker() -> None:
    DBOS(config=config())
    DBOS.launch()
    _queue()
    while True:
        time.sleep(3600)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("figure", choices=["throughput", "latency", "steps", "resume",
                                           "worker"])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("-n", type=int, default=500)
    args = parser.parse_args()
    if args.figure == "worker":
        worker()
        return
    DBOS(config=config())
    DBOS.launch()  # creates the system schema (migrations) and the queue once
    _queue()
    DBOS.destroy(destroy_registry=False)
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
