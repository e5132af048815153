"""Flow control: what fairness and rate limits cost, and how well they hold.

    python -m benchmarks.flow [--engine sqlite,postgres] [--jobs 10000] [--accuracy 60]

Per engine, each with real worker processes (``benchmarks.flow_app``), times read from
the jobs' own columns (``created_at``, ``attempted_at``, ``finished_at``):

- drain: ``--jobs`` no-op jobs spread over 1, 100 and 10,000 groups, drained by one
  worker from a ``fair=True`` queue and from a plain queue, alternately (the plain run
  right after the fair one, so both see the same machine), ``--repeat`` pairs; median
  jobs per second and the median of the pairs' ratios.
- noisy neighbour: a flood of ``--flood`` jobs of group A on a fair queue, then a job of
  group B every 0.02 s while the flood drains; B's pickup (created to attempted) p50/p99,
  against the same B jobs on an idle queue.
- claim cost: in process, ``jobs_claim`` of 10 jobs from a 10,000-job backlog with no
  limit, under a queue rate limit and under a task rate limit that never bind, and from a
  fair queue (1,000 groups), interleaved; median milliseconds per claim.
- accuracy: two workers on a ``rate_limit="20/s"`` task for ``--accuracy`` seconds; the
  largest number of starts in any one-second window, less 20.

Postgres tables are ANALYZEd after each bulk load. Prints one table; the load average
is printed with it (the machine is shared: compare ratios, not absolute figures).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

from shiftwork import App
from shiftwork.flow.claiming import claim
from shiftwork.model.limits import ClaimFlow, RateLimit

from .common import Place, load, percentiles, place, spawn, stop, wait_until


def _app(pl: Place) -> App:
    from .flow_app import make_app

    app = make_app(pl.dsn, pl.schema)
    app.migrate()
    return app


def _analyze(pl: Place) -> None:
    if pl.engine == "postgres":
        import psycopg

        with psycopg.connect(pl.dsn, autocommit=True) as c:
            c.execute(f'ANALYZE "{pl.schema}".jobs')


def _times(pl: Place, queue: str) -> list[tuple[float, float, float | None, str]]:
    """(created, attempted, finished, group) of every attempted job of ``queue``."""
    if pl.engine == "postgres":
        import psycopg

        with psycopg.connect(pl.dsn) as c:
            return [(r[0], r[1], r[2], r[3]) for r in c.execute(
                f"SELECT extract(epoch FROM created_at)::float8, "
                f"extract(epoch FROM attempted_at)::float8, "
                f"extract(epoch FROM finished_at)::float8, meta->>'group' "
                f'FROM "{pl.schema}".jobs WHERE queue = %s AND attempted_at IS NOT NULL',
                (queue,))]
    import sqlite3

    with sqlite3.connect(pl.dsn.removeprefix("sqlite:///")) as c:
        return [tuple(r) for r in c.execute(  # type: ignore[misc]
            "SELECT created_at, attempted_at, finished_at, json_extract(meta, '$.group') "
            "FROM jobs WHERE queue = ? AND attempted_at IS NOT NULL", (queue,))]


def _worker(pl: Place, queue: str, slots: int, name: str) -> Any:
    cmd = [sys.executable, "-m", "shiftwork.cli", "worker", "benchmarks.flow_app:app",
           "--log-level", "WARNING", "--grace", "5", "-q", f"{queue}={slots}"]
    return spawn(cmd, pl.env(), f"{pl.tmp}/{name}.log")


def _count(pl: Place, queue: str, group: str | None = None) -> int:
    """Jobs of ``queue`` (of one group) that finished: a count, cheap to poll."""
    if pl.engine == "postgres":
        import psycopg

        with psycopg.connect(pl.dsn) as c:
            row = c.execute(f'SELECT count(*) FROM "{pl.schema}".jobs WHERE queue = %s '
                            "AND finished_at IS NOT NULL "
                            "AND (%s::text IS NULL OR meta->>'group' = %s)",
                            (queue, group, group)).fetchone()
            return int(row[0]) if row else 0
    import sqlite3

    with sqlite3.connect(pl.dsn.removeprefix("sqlite:///")) as c:
        return int(c.execute("SELECT count(*) FROM jobs WHERE queue = ? AND finished_at "
                             "IS NOT NULL AND (? IS NULL OR json_extract(meta, '$.group') = ?)",
                             (queue, group, group)).fetchone()[0])


def _finished(pl: Place, queue: str) -> int:
    return _count(pl, queue)


def drain(engine: str, jobs: int, groups: int, fair: bool, slots: int = 20) -> float:
    """Jobs per second, first claim to last finish, of one worker draining ``jobs``."""
    queue = "fair" if fair else "plain"
    with place(engine) as pl:
        app = _app(pl)
        task = app.tasks["flow.fair" if fair else "flow.plain"]
        for i in range(0, jobs, 5000):
            task.enqueue_many([(f"g{(i + k) % groups:05d}",)
                               for k in range(min(5000, jobs - i))])
        app.close()
        _analyze(pl)
        w = _worker(pl, queue, slots, "drain")
        try:
            wait_until(lambda: _finished(pl, queue) >= jobs, 600, f"{queue} drained",
                       interval=0.25)
        finally:
            stop([w])
        t = _times(pl, queue)
        span = max(x[2] or 0 for x in t) - min(x[1] for x in t)
        return jobs / span


def noisy(engine: str, flood: int, small: int = 50) -> dict[str, dict[str, float]]:
    """Group B's pickup (ms) with a flood of A on the fair queue, and on an idle one."""
    out: dict[str, dict[str, float]] = {}
    for case in ("idle", "flood"):
        with place(engine) as pl:
            app = _app(pl)
            task = app.tasks["flow.fair"]
            if case == "flood":
                for i in range(0, flood, 5000):
                    task.enqueue_many([("A",)] * min(5000, flood - i))
                _analyze(pl)
            task.enqueue("W")  # its start says the worker is up
            w = _worker(pl, "fair", 10, "noisy")
            try:
                wait_until(lambda: _count(pl, "fair", "W"), 120, "the worker up")
                for _ in range(small):
                    task.enqueue("B")
                    time.sleep(0.02)
                wait_until(lambda: _count(pl, "fair", "B") >= small, 300, "every B job ran")
                flood_left = flood - _finished(pl, "fair") if case == "flood" else 0
            finally:
                stop([w])
                app.close()
            picks = [(t[1] - t[0]) * 1000 for t in _times(pl, "fair") if t[3] == "B"]
            out[case] = {**percentiles(picks), "flood_left": flood_left}
    return out


def claim_cost(engine: str, rounds: int = 300) -> dict[str, float]:
    """Median ms per claim of 10: unlimited, under a queue or a task rate limit that never
    binds, fair."""
    with place(engine) as pl:
        app = _app(pl)
        plain, fair = app.tasks["flow.plain"], app.tasks["flow.fair"]
        for task, need in ((plain, rounds * 30 + 10_000),  # three claims a round
                           (fair, rounds * 10 + 10_000)):
            for i in range(0, need, 5000):
                task.enqueue_many([(f"g{(i + k) % 1000:04d}",) for k in range(5000)])
        _analyze(pl)
        store = app.store
        limited = ClaimFlow(queue_rate=RateLimit(1e9, burst=1e9))
        task_limited = ClaimFlow(task_rates={plain.name: RateLimit(1e9, burst=1e9)})
        fair_flow = app.runtime.registry.claim_flow("fair")
        cases: dict[str, list[float]] = {"unlimited": [], "rate limit": [], "task rate": [],
                                         "fair": []}
        for _ in range(rounds):
            for name, queue, flow in (("unlimited", "plain", None),
                                      ("rate limit", "plain", limited),
                                      ("task rate", "plain", task_limited),
                                      ("fair", "fair", fair_flow)):
                t0 = time.perf_counter()
                got = claim(store, queue, 10, "bench", 60, None, flow)
                cases[name].append((time.perf_counter() - t0) * 1000)
                assert len(got) == 10
        app.close()
        return {k: statistics.median(v) for k, v in cases.items()}


def accuracy(engine: str, seconds: float) -> dict[str, float]:
    """Two workers on a 20/s task: the busiest one-second window's starts, less 20."""
    with place(engine) as pl:
        app = _app(pl)
        n = int(seconds * 20) + 100
        app.tasks["flow.limited"].enqueue_many([("-",)] * n)
        app.close()
        _analyze(pl)
        ws = [_worker(pl, "limited", 10, f"acc{i}") for i in range(2)]
        try:
            wait_until(lambda: len(_times(pl, "limited")) >= seconds * 20, seconds + 60,
                       "the run")
        finally:
            stop(ws)
        starts = sorted(t[1] for t in _times(pl, "limited"))
        starts = starts[: int(seconds * 20)]
        busiest = max(sum(1 for u in starts[i:i + 60] if u < s + 1.0)
                      for i, s in enumerate(starts))
        span = starts[-1] - starts[0]
        return {"over": busiest - 20, "busiest": busiest, "starts": len(starts),
                "per_s": (len(starts) - 1) / span}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default="sqlite,postgres")
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--flood", type=int, default=20_000)
    parser.add_argument("--accuracy", type=float, default=60.0)
    parser.add_argument("--only", default="drain,noisy,claim,accuracy")
    parser.add_argument("--repeat", type=int, default=3, help="fair/plain drain pairs")
    args = parser.parse_args()
    only = set(args.only.split(","))
    for engine in args.engine.split(","):
        print(f"## {engine} (load {load()})", flush=True)
        if "drain" in only:
            for groups in (1, 100, 10_000):
                pairs = []
                for _ in range(args.repeat):  # alternately, so both see the same machine
                    pairs.append((drain(engine, args.jobs, groups, True),
                                  drain(engine, args.jobs, groups, False)))
                fair = statistics.median(p[0] for p in pairs)
                plain = statistics.median(p[1] for p in pairs)
                ratio = statistics.median(p[0] / p[1] for p in pairs)
                print(f"drain {groups:>6} groups: fair {fair:7.0f}/s  plain {plain:7.0f}/s  "
                      f"median ratio {ratio:5.2f} of {args.repeat} pairs "
                      f"{[round(p[0] / p[1], 2) for p in pairs]}   (load {load()})", flush=True)
        if "noisy" in only:
            r = noisy(engine, args.flood)
            i, f = r["idle"], r["flood"]
            print(f"noisy neighbour: B pickup idle p50 {i['p50']:.0f} ms p99 {i['p99']:.0f} "
                  f"ms; during a {args.flood}-job flood p50 {f['p50']:.0f} ms p99 "
                  f"{f['p99']:.0f} ms (p99 x{f['p99'] / i['p99']:.2f}; flood left "
                  f"{f['flood_left']:.0f})   (load {load()})", flush=True)
        if "claim" in only:
            c = claim_cost(engine)
            print(f"claim of 10: unlimited {c['unlimited']:.2f} ms, queue rate limit "
                  f"{c['rate limit']:.2f} ms (x{c['rate limit'] / c['unlimited']:.2f}), task "
                  f"rate limit {c['task rate']:.2f} ms (x{c['task rate'] / c['unlimited']:.2f}),"
                  f" fair "
                  f"{c['fair']:.2f} ms (x{c['fair'] / c['unlimited']:.2f})   (load {load()})",
                  flush=True)
        if "accuracy" in only:
            a = accuracy(engine, args.accuracy)
            print(f"accuracy 20/s over {args.accuracy:.0f} s: busiest second {a['busiest']} "
                  f"(+{a['over']}), {a['per_s']:.2f} starts/s   (load {load()})", flush=True)


if __name__ == "__main__":
    main()
