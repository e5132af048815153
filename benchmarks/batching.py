"""Throughput of a batch task against the same work one job at a time.

    python benchmarks/batching.py [--jobs 20000] [--concurrency 4] [--size 100]
                                  [--work 0] [--pg postgresql://...]

Per engine: ``--jobs`` jobs of one trivial task (it returns its argument doubled, after
``--work`` seconds of sleep per job, 0 by default) drained by one in-process worker with
``--concurrency`` slots, timed from the worker's start to the last job written. Once as a
plain task (one call per job), once as ``batch=Batch(size=--size, timeout=0.05)`` (one
call per batch, each job still its own row, lease and outcome). The jobs are enqueued
before the worker starts, so a claim always finds a full batch.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
import uuid
from typing import Any

from shiftwork import App, Batch, BatchItem, Settings
from shiftwork.worker import Worker

SETTINGS = Settings(poll_interval=0.05)


def drain(app: App, queue: str, jobs: int, concurrency: int) -> float:
    """Seconds for one worker to finish every waiting job of ``queue``."""
    worker = Worker(app, {queue: concurrency}, grace=5)
    thread = threading.Thread(target=worker.run, kwargs={"install_signals": False},
                              daemon=True)
    start = time.perf_counter()
    thread.start()
    while True:  # the table says when the last outcome is written
        stats = [s for s in app.queue_stats() if s.queue == queue]
        if stats and stats[0].succeeded >= jobs:
            break
        time.sleep(0.02)
    elapsed = time.perf_counter() - start
    worker.request_stop()
    thread.join(60)
    return elapsed


def run(label: str, app: App, jobs: int, concurrency: int, size: int, work: float) -> None:
    @app.task(name="bench.one", queue="one")
    def one(n: int) -> int:
        if work:
            time.sleep(work)
        return n * 2

    @app.task(name="bench.many", queue="many", batch=Batch(size=size, timeout=0.05))
    def many(items: list[BatchItem]) -> list[Any]:
        if work:
            time.sleep(work * len(items))
        return [item.args[0] * 2 for item in items]

    app.migrate()
    figures = {}
    for name, task in (("one job at a time", one), (f"batch of {size}", many)):
        queue = task.options.queue
        task.enqueue_many([(i,) for i in range(jobs)])
        seconds = drain(app, queue, jobs, concurrency)
        figures[name] = jobs / seconds
        print(f"{label}: {name:<20} {jobs} jobs in {seconds:6.2f} s  "
              f"{jobs / seconds:9.0f} jobs/s")
    plain, batched = figures.values()
    print(f"{label}: batch / one at a time      x{batched / plain:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--work", type=float, default=0.0,
                        help="seconds of sleep per job (both ways)")
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--engine", choices=["sqlite", "postgres", "all"], default="all")
    args = parser.parse_args()
    if args.engine in ("sqlite", "all"):
        with tempfile.TemporaryDirectory() as tmp:
            app = App(f"sqlite:///{tmp}/bench.db", settings=SETTINGS)
            try:
                run("sqlite  ", app, args.jobs, args.concurrency, args.size, args.work)
            finally:
                app.close()
    if args.engine in ("postgres", "all"):
        app = App(args.pg, schema=f"bench_{uuid.uuid4().hex[:8]}", settings=SETTINGS)
        try:
            run("postgres", app, args.jobs, args.concurrency, args.size, args.work)
        finally:
            app.store.drop_schema()  # type: ignore[attr-defined]
            app.close()


if __name__ == "__main__":
    main()
