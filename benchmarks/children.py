"""``python -m benchmarks.children``: what child workflows and wf.parallel cost.

One real worker process (fan=8, parents=2). Same run, alternating: (a) fan-out/fan-in of
N calls through ``wf.parallel`` against enqueueing N plain jobs at once and waiting for
all; the same with members that work 20 ms each and the parent in a queue of its own
(so it is free to replay whenever woken); the parent's runs are counted; (b) a
workflow awaiting one child workflow against a workflow doing the same work in one step.
Figures are end-to-end (enqueue to the last job finished), medians of the rounds.
"""

from __future__ import annotations

import statistics
import sys
import time
from functools import partial
from typing import Any

from shiftwork import App, JobState

from .common import load, place, stop, wait_until


def _app(pl: Any) -> App:
    a = App(pl.dsn, schema=pl.schema)
    a.migrate()
    return a


def _done(app: App, job_id: int) -> bool:
    return app.get_job(job_id).state is JobState.SUCCEEDED


def _all_done(app: App, ids: list[int]) -> bool:
    return all(_done(app, i) for i in ids)


#: How long each member of the second fan-out works: its reports arrive spread out, so a
#: parent woken by every report would replay once per member.
SLOW_MS = 20


def run(engine: str, n: int, rounds: int) -> dict[str, Any]:
    from . import children_app

    out: dict[str, list[float]] = {k: [] for k in (
        "parallel", "plain", "runs", "parallel_slow", "plain_slow", "runs_slow", "child",
        "single")}
    with place(engine) as pl:
        app = _app(pl)
        worker = shiftwork_worker_for(pl)
        try:
            # warm up: the worker is up and has run one of each
            h = app.enqueue_many([children_app.single.call()])[0]
            wait_until(lambda: _done(app, h.id), 60, "warm-up")
            for _ in range(rounds):
                for label, ms in (("", 0), ("_slow", SLOW_MS)):
                    t0 = time.perf_counter()
                    wf = children_app.fan_apart if ms else children_app.fan
                    j = app.enqueue_many([wf.call(n, ms)])[0]
                    wait_until(partial(_done, app, j.id), 300, "fan")
                    out["parallel" + label].append(time.perf_counter() - t0)
                    # the parent's runs (each replay is a claimed attempt)
                    out["runs" + label].append(app.get_job(j.id).attempt)
                    t0 = time.perf_counter()
                    ids = [r.id for r in app.enqueue_many([children_app.leaf.call(i, ms)
                                                           for i in range(n)])]
                    wait_until(partial(_all_done, app, ids), 300, "plain")
                    out["plain" + label].append(time.perf_counter() - t0)
                for name, task in (("child", children_app.parent),
                                   ("single", children_app.single)):
                    t0 = time.perf_counter()
                    j = app.enqueue_many([task.call()])[0]
                    wait_until(partial(_done, app, j.id), 60, name, interval=0.002)
                    out[name].append(time.perf_counter() - t0)
        finally:
            stop([worker])
            app.close()
    return {k: statistics.median(v) for k, v in out.items()}


def shiftwork_worker_for(pl: Any) -> Any:
    import os

    from .common import spawn

    cmd = [sys.executable, "-m", "shiftwork.cli", "worker", "benchmarks.children_app:app",
           "--log-level", "WARNING", "--grace", "5", "-q", "fan=8", "-q", "parents=2"]
    return spawn(cmd, pl.env(), os.path.join(pl.tmp, "worker.log"))


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    for engine in ("sqlite", "postgres"):
        before = load()
        r = run(engine, n, rounds)
        print(f"{engine}: load {before} -> {load()}; N={n}, {rounds} rounds (medians)")
        print(f"  wf.parallel of {n} calls: {r['parallel'] * 1000:.0f} ms; {n} plain jobs: "
              f"{r['plain'] * 1000:.0f} ms; ratio {r['parallel'] / r['plain']:.2f}; "
              f"parent runs {r['runs']:.0f}")
        print(f"  wf.parallel of {n} calls of {SLOW_MS} ms (parent in its own queue): "
              f"{r['parallel_slow'] * 1000:.0f} ms;"
              f" {n} plain jobs of {SLOW_MS} ms: {r['plain_slow'] * 1000:.0f} ms; ratio "
              f"{r['parallel_slow'] / r['plain_slow']:.2f}; parent runs {r['runs_slow']:.0f}")
        print(f"  workflow awaiting one child: {r['child'] * 1000:.0f} ms; one-step workflow: "
              f"{r['single'] * 1000:.0f} ms; ratio {r['child'] / r['single']:.2f}")


if __name__ == "__main__":
    main()
