"""Retention: the claim's cost with finished history retained, and its pruning.

    python -m benchmarks.retention [--finished 1000000] [--claims 2000]
                                   [--engines sqlite,postgres,postgres-partitioned]

On one ``jobs`` table (sqlite, postgres: finished rows deleted by the leader ``limit`` at
a time) and on partitioned history (postgres-partitioned, issue 31: the finished rows in
a range's leaf, which the leader's upkeep drops whole):

- the claim of one due job (the worker's statement, a batch of 10 as it claims them),
  ``--claims`` jobs, on an empty table and then beside ``--finished`` finished jobs
  (filled in one statement, then ANALYZE): p50 and p99 per claim;
- pruning those finished jobs as the pruner does (``store.jobs.prune``, 10,000 a
  statement, until none is left; partitioned: ``store.partitions.maintain`` once the
  clock is past the range's retention, then ``prune`` of what jobs_hot holds): seconds in
  all and rows a second.

The figures are from whatever machine runs it; on a shared one, say so beside them.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from .common import load, percentiles, place

_PG_FILL = """
INSERT INTO {schema}.jobs (queue, task, args, state, max_attempts, attempt, run_at,
                           created_at, finished_at, errors, meta)
SELECT 'default', 'bench.done', '{"args": []}', 'succeeded', 3, 1, t, t, t, '[]', '{}'
FROM generate_series(1, %(jobs)s) AS i,
     LATERAL (SELECT now() - interval '30 days' + make_interval(secs => i * 0.01)) AS s(t)
"""

_SQLITE_FILL = """
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :jobs)
INSERT INTO jobs (queue, task, args, state, max_attempts, attempt, run_at, created_at,
                  finished_at, errors, meta)
SELECT 'default', 'bench.done', '{"args": []}', 'succeeded', 3, 1, :t + i * 0.01,
       :t + i * 0.01, :t + i * 0.01, '[]', '{}'
FROM n
"""


def _fill(app: Any, jobs: int, start: str = "now() - interval '30 days'") -> None:
    """``jobs`` finished jobs, 0.01 s apart from ``start`` (a SQL instant; SQLite: 30
    days ago), in one statement, then ANALYZE."""
    store = app.store
    if store.engine == "sqlite":
        with store.conn:
            store.conn.execute(_SQLITE_FILL, {"jobs": jobs, "t": time.time() - 30 * 86400})
            store.conn.execute("ANALYZE")
        return
    import psycopg

    with psycopg.connect(app.dsn, autocommit=True) as c:
        c.execute(_PG_FILL.replace("{schema}", f'"{app.schema}"')  # type: ignore[arg-type]
                  .replace("now() - interval '30 days'", start), {"jobs": jobs})
        c.execute(f'VACUUM ANALYZE "{app.schema}".jobs')


def _claims(app: Any, count: int) -> dict[str, float]:
    """Enqueue ``count`` jobs, then claim them 10 at a time: ms per claim statement."""
    from shiftwork.flow.claiming import claim

    app.store.jobs.insert([_new() for _ in range(count)])
    times = []
    while True:
        t = time.perf_counter()
        got = claim(app.store, "default", 10, "bench", 30.0, None)
        times.append((time.perf_counter() - t) * 1000)
        if not got:
            break
    return {k: round(v, 3) for k, v in percentiles(times).items()}


def _new() -> Any:
    from shiftwork.model.new_job import NewJob

    return NewJob(task="bench.todo", queue="default", args_json='{"args": []}')


def one(engine: str, finished: int, claims: int) -> dict[str, Any]:
    from datetime import UTC, datetime, timedelta

    from shiftwork import App, FakeClock

    out: dict[str, Any] = {"engine": engine, "finished": finished}
    partitioned = engine == "postgres-partitioned"
    clock = FakeClock(datetime.now(UTC))
    with place(engine.removesuffix("-partitioned")) as pl:
        app = App(pl.dsn, schema=pl.schema, clock=clock)
        try:
            app.migrate()
            start = "now() - interval '30 days'"
            store: Any = app.store  # PostgreSQL's store: its history ranges
            if partitioned:
                store.partitions.convert()
                _, since = store.partitions.layout()
                start = f"'{since.isoformat()}'::timestamptz"  # the first range
            out["claim_ms_empty"] = _claims(app, claims)
            t = time.perf_counter()
            _fill(app, finished, start)
            out["fill_s"] = round(time.perf_counter() - t, 1)
            out["claim_ms_retained"] = _claims(app, claims)
            t = time.perf_counter()
            pruned = 0
            if partitioned:  # a day past the retention of the range filled
                clock.set(since + timedelta(days=3, hours=1))
                upkeep = store.partitions.maintain(86400.0, 86400.0)
                out["dropped"] = upkeep.dropped
                pruned = finished if any(d.endswith("_done") for d in upkeep.dropped) else 0
            while True:
                n = app.store.jobs.prune(86400.0, 86400.0, limit=10_000)
                pruned += n
                if n == 0:
                    break
            spent = time.perf_counter() - t
            out["pruned"] = pruned
            out["prune_s"] = round(spent, 2)
            out["pruned_per_s"] = round(pruned / spent) if spent else None
            out["load"] = load()
        finally:
            app.close()
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.retention")
    parser.add_argument("--finished", type=int, default=1_000_000)
    parser.add_argument("--engines", default="sqlite,postgres,postgres-partitioned")
    parser.add_argument("--claims", type=int, default=2000)
    args = parser.parse_args(argv)
    for engine in args.engines.split(","):
        print(json.dumps(one(engine.strip(), args.finished, args.claims)), flush=True)


if __name__ == "__main__":
    main()
