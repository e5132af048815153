"""What composition costs: fan-out/fan-in against a plain drain, job.result latency, and
the enqueue of a dependency graph.

    python -m benchmarks.composition [--engine postgres|sqlite|both] [--n 10000] [--rounds 2]

1. Fan-out/fan-in: a group of ``n`` no-op members and a callback, from the start of the
   enqueue to the callback's start, against a plain drain of ``n`` no-op jobs (enqueue
   start to the last job's finish). Both on the same idle worker process, alternately,
   with ANALYZE right after each bulk enqueue on Postgres, in a rotating order. Times are
   the database's.
2. ``job.result`` latency: from the job's finished_at (database clock, same host) to
   the return of ``result()`` in this process, one job at a time.
3. A 1,000-node dependency graph (each node after up to two earlier ones) enqueued by
   ``app.enqueue_graph`` (one transaction), against ``enqueue_many`` of 1,000 plain jobs.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from typing import Any

from shiftwork import App, Settings

from .common import place, spawn, stop


def register(target: App) -> App:
    @target.task(name="noop")
    def noop(i: int = 0) -> None:
        return None

    @target.task(name="fan_in")
    def fan_in(results: list[Any]) -> int:
        return len(results)

    return target


#: The worker processes' app (benchmarks.composition:app), on the run's database.
app = register(App(os.environ.get("BENCH_DSN", f"sqlite:///{tempfile.gettempdir()}/unused.db"),
                   schema=os.environ.get("BENCH_SCHEMA", "shiftwork"),
                   settings=Settings(poll_interval=0.2)))


def _analyze(bench: App) -> None:
    if bench.store.engine == "postgres":
        with bench.store.transaction() as c:
            c.execute(f'ANALYZE "{bench.schema}".jobs')
            c.execute(f'ANALYZE "{bench.schema}".job_deps')


def _wait_done(bench: App, ids: list[int], timeout: float = 600) -> None:
    last = ids[-1]
    deadline = time.monotonic() + timeout
    while bench.get_job(last).finished_at is None or any(
            bench.get_job(i).finished_at is None for i in ids[-50:]):
        if time.monotonic() > deadline:
            raise SystemExit("timed out")
        time.sleep(0.05)


def plain_drain(bench: App, n: int) -> float:
    start = bench.store.db_now()
    ids = [r.id for r in bench.tasks["noop"].enqueue_many([(i,) for i in range(n)])]
    _analyze(bench)
    bench.wait_result(ids[-1], timeout=600)
    _wait_done(bench, ids)
    with bench.store.transaction() as c:  # the last finish among all of them
        table = "jobs" if bench.store.engine == "sqlite" else f'"{bench.schema}".jobs'
        row = c.execute(f"SELECT max(finished_at) FROM {table} WHERE id >= {ids[0]} "
                        f"AND id <= {ids[-1]}").fetchone()
    last = row[0]
    if isinstance(last, (int, float)):
        return float(last) - start.timestamp()
    return float((last - start).total_seconds())


def fan_out_in(bench: App, n: int, together: bool = False) -> float:
    """``together``: the callback in the group's transaction (``then=``), else g.then."""
    start = bench.store.db_now()
    members = (bench.tasks["noop"].call(i) for i in range(n))
    if together:
        g = bench.group(members, then=bench.tasks["fan_in"].call())
        assert g.callback is not None
        cb = g.callback
    else:
        g = bench.group(members)
        cb = g.then(bench.tasks["fan_in"].call())
    _analyze(bench)
    assert cb.result(timeout=600) == n
    began = bench.get_job(cb.id).attempted_at
    assert began is not None
    if os.environ.get("BENCH_VERBOSE"):
        first = bench.get_job(g.jobs[0].id).attempted_at
        last = max(t for j in g.jobs[-20:] if (t := bench.get_job(j.id).finished_at))
        assert first is not None
        print(f"    enqueued by {(bench.get_job(cb.id).created_at - start).total_seconds():.2f}"
              f" s, first member started {(first - start).total_seconds():.2f} s,"
              f" members done by {(last - start).total_seconds():.2f} s")
    return (began - start).total_seconds()


def result_latency(bench: App, count: int) -> list[float]:
    out = []
    for i in range(count):
        job = bench.tasks["noop"].enqueue(i)
        job.result(timeout=30)
        returned = time.time()
        finished = bench.get_job(job.id).finished_at
        assert finished is not None
        out.append((returned - finished.timestamp()) * 1000)
    return out


def graph_enqueue(bench: App, nodes: int, rounds: int) -> tuple[list[float], list[float]]:
    rng = random.Random(7)
    graph, plain = [], []
    for _ in range(rounds):
        names = [f"n{i}" for i in range(nodes)]
        after = {name: rng.sample(names[:i], min(i, rng.randint(0, 2)))
                 for i, name in enumerate(names)}
        requests = {name: bench.tasks["noop"].call(i) for i, name in enumerate(names)}
        t0 = time.perf_counter()
        bench.enqueue_graph(requests, after)
        graph.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        bench.tasks["noop"].enqueue_many([(i,) for i in range(nodes)])
        plain.append((time.perf_counter() - t0) * 1000)
    return graph, plain


def run(engine: str, n: int, rounds: int) -> None:
    with place(engine) as pl:
        bench = register(App(pl.dsn, schema=pl.schema, settings=Settings(poll_interval=0.2)))
        bench.migrate()
        worker = spawn([sys.executable, "-m", "shiftwork.cli", "worker",
                        "benchmarks.composition:app", "--log-level", "WARNING", "--grace",
                        "5", "-q", "default=10"], pl.env(), os.path.join(pl.tmp, "w.log"))
        try:
            bench.tasks["noop"].enqueue(0).result(timeout=60)  # the worker is up
            print(f"\n{engine}: load average {os.getloadavg()[0]:.2f} at start")
            plains: list[float] = []
            fans: list[float] = []
            togethers: list[float] = []
            runs = [(plains, lambda: plain_drain(bench, n)), (fans, lambda: fan_out_in(bench, n)),
                    (togethers, lambda: fan_out_in(bench, n, together=True))]
            for r in range(rounds):
                # Each round in a different order: a run late in a round drains a table
                # with more dead rows behind it, and no variant should always be that one.
                for times, measure in runs[r % 3:] + runs[:r % 3]:
                    times.append(measure())
                print(f"  round {r + 1}: plain drain {plains[-1]:.2f} s, fan-out/fan-in "
                      f"{fans[-1]:.2f} s (g.then), {togethers[-1]:.2f} s (then=)")
            lat = sorted(result_latency(bench, 300))
            graph, plain_enqueue = graph_enqueue(bench, 1000, 7)
            plain = statistics.median(plains)
            for label, times in (("g.then", fans), ("then=", togethers)):
                print(f"  fan-out/fan-in {n} ({label}): median {statistics.median(times):.2f} s"
                      f" vs plain {plain:.2f} s: ratio {statistics.median(times) / plain:.3f}")
            print(f"  job.result latency (finish -> return), 300 jobs: p50 "
                  f"{statistics.median(lat):.2f} ms, p95 {lat[int(len(lat) * .95)]:.2f} ms")
            print(f"  1,000-node graph enqueue: median {statistics.median(graph):.1f} ms "
                  f"(plain enqueue_many of 1,000: {statistics.median(plain_enqueue):.1f} ms)")
            print(f"  load average {os.getloadavg()[0]:.2f} at end")
        finally:
            stop([worker])
            bench.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--engine", default="both", choices=["postgres", "sqlite", "both"])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    for engine in (["postgres", "sqlite"] if args.engine == "both" else [args.engine]):
        run(engine, args.n, args.rounds)


if __name__ == "__main__":
    main()
