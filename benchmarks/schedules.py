"""Schedules due at the same instant: how late the leader enqueues them, and how long a
worker's start-up reconcile takes, per count and engine.

    python -m benchmarks.schedules [--counts 1000,10000,100000] [--engines postgres,sqlite]

Per (engine, count): the benchmark declares ``count`` yearly schedules, times the first
reconcile (all created) and a second one (all unchanged: what every worker start does),
starts one real worker process (its own start-up reconcile), waits until it leads and
its scheduler passes run, then moves every cursor to one instant 2 s ahead (a near-future
instant: the same as a common cron boundary, without waiting for one). The worker records
each ``schedule.fired`` event, emitted after its firing transaction commits: lateness =
that moment minus the fire instant (p50, p99, max), and the span from the fire instant to
the last one. ``BENCH_SHIFTWORK_SRC=/path/to/src`` runs another checkout's code (the
before figures). Also prints the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from .common import ROOT, load, percentiles, place, stop, wait_until
from .recorder import read_all

LEAD = 2.0  # seconds between moving the cursors and the fire instant


def _spawn(pl: Any, count: int, log: str) -> Any:
    import subprocess

    src = os.environ.get("BENCH_SHIFTWORK_SRC", str(ROOT / "src"))
    env = {**os.environ, **pl.env(), "BENCH_SCHEDULES": str(count),
           "PYTHONPATH": f"{src}{os.pathsep}{ROOT}"}
    cmd = [sys.executable, "-m", "shiftwork.cli", "worker", "benchmarks.schedules_app:app",
           "--log-level", "WARNING", "-q", "bidle=1"]
    out = open(log, "ab")  # noqa: SIM115
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)


def _sql(app: Any, text: str, params: dict[str, Any]) -> list[Any]:
    store = app.store
    if store.engine == "sqlite":
        with store.conn:
            return list(store.conn.execute(text.replace("{schema}.", ""), {
                k: v.timestamp() if isinstance(v, datetime) else v for k, v in params.items()}))
    import psycopg

    with psycopg.connect(app.dsn, autocommit=True) as c:
        cur = c.execute(text.replace("{schema}", f'"{app.schema}"').replace(":at", "%(at)s"),
                        params)
        return cur.fetchall() if cur.description else []


def one(engine: str, count: int) -> dict[str, Any]:
    from shiftwork.schedules.scheduler import reconcile

    from .schedules_app import make_app

    with place(engine) as pl:
        t = time.perf_counter()
        app = make_app(pl.dsn, pl.schema, count)
        declare_s = time.perf_counter() - t
        app.migrate()
        t = time.perf_counter()
        reconcile(app.runtime)
        created_s = time.perf_counter() - t
        t = time.perf_counter()
        reconcile(app.runtime)
        unchanged_s = time.perf_counter() - t
        log = os.path.join(pl.tmp, "worker.log")
        proc = _spawn(pl, count, log)
        try:
            ready = time.monotonic()
            # The worker leads and has reconciled when a cursor moved to now fires.
            probe = datetime.now(UTC) + timedelta(seconds=0.5)
            _sql(app, "UPDATE {schema}.schedules SET next_fire_at = :at WHERE name = 'b-000000'",
                 {"at": probe})
            wait_until(lambda: proc.poll() is not None or _sql(
                app, "SELECT count(*) FROM {schema}.schedule_runs", {})[0][0] > 0,
                timeout=900, what="the worker to lead and fire", interval=0.05)
            if proc.poll() is not None:
                with open(log) as f:
                    raise RuntimeError(f"worker exited; see {log}:\n{f.read()[-2000:]}")
            worker_start_s = time.monotonic() - ready
            time.sleep(1.0)
            fire_at = (datetime.now(UTC) + timedelta(seconds=LEAD)).replace(microsecond=0)
            _sql(app, "UPDATE {schema}.schedules SET next_fire_at = :at "
                      "WHERE name <> 'b-000000'", {"at": fire_at})
            wait_until(lambda: proc.poll() is not None or _sql(
                app, "SELECT count(*) FROM {schema}.schedule_runs", {})[0][0] >= count,
                timeout=1800, what="every occurrence", interval=0.2)
            time.sleep(0.6)  # the recorder flushes every 0.2 s
        finally:
            stop([proc])
        late = [float(r[2]) for r in read_all(pl.record_dir)
                if r[0] == "f" and r[1] != "b-000000"]
        jobs = _sql(app, "SELECT count(*), count(DISTINCT unique_key) FROM {schema}.jobs", {})[0]
        p = percentiles(late)
        return {"engine": engine, "schedules": count, "fired": len(late),
                "jobs": int(jobs[0]), "distinct_keys": int(jobs[1]),
                "late_p50_s": p.get("p50"), "late_p99_s": p.get("p99"),
                "late_max_s": p.get("max"), "declare_s": declare_s,
                "reconcile_created_s": created_s, "reconcile_unchanged_s": unchanged_s,
                "worker_ready_s": worker_start_s, "load": load()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--counts", default="1000,10000,100000")
    ap.add_argument("--engines", default="postgres,sqlite")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    results = []
    for count in [int(c) for c in args.counts.split(",")]:
        for engine in args.engines.split(","):
            r = one(engine, count)
            results.append(r)
            print(f"{engine:8} {count:>7}: late p50 {r['late_p50_s']:.3f}s "
                  f"p99 {r['late_p99_s']:.3f}s max {r['late_max_s']:.3f}s "
                  f"(fired {r['fired']}, jobs {r['jobs']}, keys {r['distinct_keys']}); "
                  f"reconcile created {r['reconcile_created_s']:.2f}s, unchanged "
                  f"{r['reconcile_unchanged_s']:.2f}s; worker ready {r['worker_ready_s']:.1f}s;"
                  f" load {r['load']}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
