"""``python -m benchmarks.workflow_streams``: streams and continue-as-new (issue 32).

Two figures, on SQLite and PostgreSQL (``--engine``):

- ``latency``: a workflow on an in-process worker appends ``-n`` values to a stream, a few
  milliseconds apart, each carrying the instant just before its append; a reader in the
  main thread (``handle.read_stream``) takes each value's arrival time. Append to read,
  p50 and p99 in milliseconds (the append's own commit included).
- ``loop``: one workflow runs ``-n`` iterations (a step and a zero sleep each), continuing
  as new after each, drained in this thread. The history's rows and bytes are sampled at
  every iteration: they stay those of one iteration.

Prints one ``result {json}`` line per figure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading

# Real time: what is measured.
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg

from shiftwork import App, Settings, Workflow
from shiftwork.testing import drain
from shiftwork.worker import Worker

PG = "postgresql://postgres@127.0.0.1:5432/test"


def _app(engine: str, folder: Path, pg: str) -> tuple[App, str]:
    if engine == "sqlite":
        app = App(f"sqlite:///{folder / 'bench.db'}", settings=Settings(poll_interval=0.2))
        app.migrate()
        return app, ""
    schema = f"wsb_{uuid.uuid4().hex[:10]}"
    app = App(pg, schema=schema, settings=Settings(poll_interval=0.2))
    app.migrate()
    return app, schema


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def latency(app: App, n: int, gap: float) -> dict[str, Any]:
    @app.workflow(name="bench.stream")
    def produce(wf: Workflow, count: int) -> None:
        for _ in range(count):
            time.sleep(gap)  # (not a durable sleep: pacing inside one run)
            wf.write_stream("t", time.perf_counter())
        wf.close_stream("t")

    worker = Worker(app, {"default": 1})
    thread = threading.Thread(target=worker.run, kwargs={"install_signals": False},
                              daemon=True)
    thread.start()
    worker.started.wait(30)
    try:
        job = produce.enqueue(n)
        samples = [(time.perf_counter() - float(sent)) * 1000
                   for sent in job.read_stream("t", timeout=60)]
    finally:
        worker.request_stop()
        thread.join(60)
    return {"values": len(samples), "p50_ms": round(statistics.median(samples), 2),
            "p99_ms": round(_pct(samples, 0.99), 2), "max_ms": round(max(samples), 2)}


def _history(app: App, job_id: int) -> tuple[int, int]:
    steps = app.store.workflows.steps_get(job_id)
    return len(steps), sum(len(json.dumps(s.result)) for s in steps.values())


def loop(app: App, n: int) -> dict[str, Any]:
    most = {"rows": 0, "bytes": 0}

    @app.workflow(name="bench.loop")
    def counter(wf: Workflow, i: int, total: int) -> int:
        n = wf.step(f"add-{i}", lambda: {"i": i + 1, "pad": "x" * 100})["i"]
        wf.sleep("pause", 0)
        if n >= total:
            return int(n)
        rows, size = _history(app, wf.id)  # the history at its longest: before the reset
        most["rows"], most["bytes"] = max(most["rows"], rows), max(most["bytes"], size)
        wf.continue_as_new(n, total)

    job = counter.enqueue(0, n)
    start = time.perf_counter()
    drain(app, max_jobs=10 * n + 10)
    took = time.perf_counter() - start
    got = app.get_job(job.id)
    rows, size = _history(app, job.id)
    return {"iterations": got.result, "generation": app.workflows.generation(job.id),
            "seconds": round(took, 1), "iterations_per_s": round(n / took, 1),
            "most_history_rows": most["rows"], "most_history_bytes": most["bytes"],
            "final_history_rows": rows, "final_history_bytes": size}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("figure", choices=("latency", "loop"))
    parser.add_argument("--engine", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("-n", type=int, default=None,
                        help="values (latency, default 500) or iterations (loop, 10,000)")
    parser.add_argument("--gap", type=float, default=0.005,
                        help="seconds between appends (latency)")
    parser.add_argument("--pg", default=PG, help="the PostgreSQL DSN")
    args = parser.parse_args()
    if args.n is not None and args.n < 1:
        parser.error("-n must be at least 1")
    with tempfile.TemporaryDirectory() as folder:
        app, schema = _app(args.engine, Path(folder), args.pg)
        try:
            if args.figure == "latency":
                result = latency(app, args.n or 500, args.gap)
            else:
                result = loop(app, args.n or 10_000)
        finally:
            app.close()
            if schema:
                with psycopg.connect(args.pg, autocommit=True) as conn:
                    conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    print("result " + json.dumps({"figure": args.figure, "engine": args.engine, **result}),
          flush=True)


if __name__ == "__main__":
    main()
