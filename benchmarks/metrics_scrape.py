"""Cost of one Prometheus scrape against a jobs table holding 1,000,000 finished jobs.

    python benchmarks/metrics_scrape.py [--dsn postgresql://...] [--finished 1000000]

Fills a throwaway schema with generate_series (finished history, some dead jobs, a
small live backlog, a few workers), then times ``Metrics.exposition()`` (every
database read a scrape makes) and, for comparison, ``queues_stats`` with and
without the count of finished history. Drops the schema at the end.
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid

import psycopg

from shiftwork import App
from shiftwork.observe.metrics import Metrics

FILL = """
INSERT INTO {s}.jobs (queue, task, args, state, attempt, max_attempts, run_at, created_at,
                      attempted_at, finished_at, errors)
SELECT 'q' || (i %% 8), 'tasks.t' || (i %% 40), '{{"args": [1, "x"]}}'::jsonb,
       CASE WHEN i %% 100 = 0 THEN 'dead' WHEN i %% 37 = 0 THEN 'cancelled' ELSE 'succeeded' END,
       1, 3, now() - make_interval(secs => i %% 86400), now() - make_interval(secs => i %% 86400),
       now() - make_interval(secs => i %% 86400), now() - make_interval(secs => i %% 86400 - 1),
       '[]'::jsonb
FROM generate_series(1, %(n)s) AS i
"""
BACKLOG = """
INSERT INTO {s}.jobs (queue, task, args, state, attempt, max_attempts, run_at, created_at,
                      worker_id, lease_expires_at)
SELECT 'q' || (i %% 8), 'tasks.t' || (i %% 40), '{{"args": []}}'::jsonb,
       CASE WHEN i %% 20 = 0 THEN 'running' WHEN i %% 7 = 0 THEN 'scheduled' ELSE 'available' END,
       CASE WHEN i %% 20 = 0 THEN 1 ELSE 0 END, 3,
       now() + make_interval(secs => CASE WHEN i %% 7 = 0 THEN 600 ELSE -(i %% 300) END), now(),
       CASE WHEN i %% 20 = 0 THEN 'w' || (i %% 4) END,
       CASE WHEN i %% 20 = 0 THEN now() + interval '30 seconds' END
FROM generate_series(1, %(n)s) AS i
"""


def timed(fn: object, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        out.append((time.perf_counter() - start) * 1000)
    return out


def summary(name: str, ms: list[float]) -> str:
    ms = sorted(ms)
    p95 = ms[min(len(ms) - 1, int(len(ms) * 0.95))]
    return f"{name:<44} median {statistics.median(ms):8.2f} ms   p95 {p95:8.2f} ms   (n={len(ms)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--finished", type=int, default=1_000_000)
    parser.add_argument("--backlog", type=int, default=2_000)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    schema = f"bench_metrics_{uuid.uuid4().hex[:8]}"
    app = App(args.dsn, schema=schema)
    try:
        app.migrate()
        s = f'"{schema}"'
        started = time.perf_counter()
        with psycopg.connect(args.dsn, autocommit=True) as conn:
            conn.execute(FILL.format(s=s).encode(), {"n": args.finished})
            conn.execute(BACKLOG.format(s=s).encode(), {"n": args.backlog})
            conn.execute(f"VACUUM ANALYZE {s}.jobs".encode())
            size = conn.execute(f"SELECT pg_size_pretty(pg_total_relation_size('{s}.jobs'))"
                                .encode()).fetchone()
        for i in range(4):
            app.store.fleet.workers_upsert(f"w{i}", "bench", 1000 + i, {"q0": 10})
        print(f"filled {args.finished:,} finished + {args.backlog:,} live jobs in "
              f"{time.perf_counter() - started:.1f}s; jobs table {size[0] if size else '?'}")

        metrics = Metrics(app)
        metrics.exposition()  # warm the pool and caches
        body = metrics.exposition()
        print(f"one scrape: {len(body):,} bytes, "
              f"{sum(1 for ln in body.splitlines() if ln and not ln.startswith(b'#'))} samples")
        print(summary("Metrics.exposition() (whole scrape)", timed(metrics.exposition,
                                                                      args.runs)))
        print(summary("queues_stats(include_finished=False)",
                      timed(lambda: app.store.jobs.queues_stats(include_finished=False),
                            args.runs)))
        print(summary("queues_stats(include_finished=True)",
                      timed(lambda: app.store.jobs.queues_stats(include_finished=True),
                            max(3, args.runs // 5))))
        with psycopg.connect(args.dsn, autocommit=True) as conn:
            conn.execute(f"SET search_path TO {s}".encode())
            text = app.store.q["queues_stats"]  # type: ignore[attr-defined]
            plan = conn.execute(b"EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + text.encode(),
                                {"now": None}).fetchall()
        print("plan of queues_stats:")
        for (line,) in plan:
            if any(w in line for w in ("Scan", "Execution", "Buffers: shared")):
                print("   ", line.strip())
    finally:
        app.store.drop_schema()  # type: ignore[attr-defined]
        app.close()


if __name__ == "__main__":
    main()
