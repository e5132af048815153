"""``python -m benchmarks.talk [N]``: what a workflow update and a query cost.

One real worker process. A workflow takes N updates one after the other (each a
``handle.update`` blocked until the workflow's handler result is back: the request's
insert, the wake-up, the claim, the replay of the history so far, the resolving
transaction and its wake-up to the caller); then N queries (``handle.query``, one read).
The replay grows with the history: update k replays k - 1 recorded steps.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from shiftwork import App

from .common import load, percentiles, place, spawn, stop, wait_until


def run(engine: str, n: int) -> dict[str, Any]:
    from . import talk_app

    with place(engine) as pl:
        app = App(pl.dsn, schema=pl.schema)
        app.migrate()
        cmd = [sys.executable, "-m", "shiftwork.cli", "worker", "benchmarks.talk_app:app",
               "--log-level", "WARNING", "--grace", "5", "-q", "talk=1"]
        worker = spawn(cmd, pl.env(), os.path.join(pl.tmp, "worker.log"))
        try:
            job = app.enqueue_many([talk_app.counter.call(n + 1)])[0]
            handle = app.job(job.id)
            # this App does not register the workflow: it is known once it has begun
            wait_until(lambda: app.get_workflow(job.id) is not None, 60, "the first run")
            handle.update("add", 0, timeout=60)  # warm up: the worker is up, it waits
            updates, queries = [], []
            for _ in range(n):
                t0 = time.perf_counter()
                handle.update("add", 1, timeout=60)
                updates.append(time.perf_counter() - t0)
            wait_until(lambda: handle.query("total") == n, 30, "the last state")
            for _ in range(n):
                t0 = time.perf_counter()
                handle.query("total")
                queries.append(time.perf_counter() - t0)
        finally:
            stop([worker])
            app.close()
    return {"update": percentiles(updates), "query": percentiles(queries)}


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    for engine in ("sqlite", "postgres"):
        before = load()
        r = run(engine, n)
        print(f"{engine}: load {before} -> {load()}; {n} updates, then {n} queries")
        for what in ("update", "query"):
            p = r[what]
            print(f"  {what}: " + ", ".join(f"{k} {v * 1000:.1f} ms" for k, v in p.items()
                                            if k != "n"))


if __name__ == "__main__":
    main()
