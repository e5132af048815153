"""p95 of the dashboard's history pages (issue 29) over a large history, both engines:
the workflows list (first page, filtered by status, by a part of the name, by a filter
nothing matches, a deep ``before=`` page) and a schedule's page (first and a deep page),
each a real HTTP GET to a really served dashboard, and the one query behind each.

    python benchmarks/history_pages.py [--engine sqlite|postgres|all]
        [--workflows 100000] [--steps 4] [--occurrences 50000] [--runs 50]

Fills a throwaway SQLite file / Postgres schema with generated rows (workflows with
their jobs and steps, a schedule's occurrences with their jobs), times ``--runs`` GETs of
each page, prints p50/p95, and drops it all at the end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
import uuid
from typing import Any

from shiftwork import App
from shiftwork.schedules.stored import schedules_of

PG_DSN = os.environ.get("SHIFTWORK_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/test")
TOKEN = "bench-token-0123456789"

# One in 50 workflows running (waiting for an event), one in 20 failed, the rest done.
PG_FILL = """
INSERT INTO {s}.jobs (id, queue, task, args, state, attempt, max_attempts, run_at, created_at,
                      attempted_at, finished_at)
OVERRIDING SYSTEM VALUE
SELECT i, 'default', 'flows.order_' || (i %% 20), '{{"args": []}}'::jsonb,
       CASE WHEN i %% 50 = 0 THEN 'scheduled' WHEN i %% 20 = 0 THEN 'dead' ELSE 'succeeded' END,
       1, 3, now(), now() - make_interval(secs => %(n)s - i),
       now() - make_interval(secs => %(n)s - i),
       CASE WHEN i %% 50 = 0 THEN NULL ELSE now() - make_interval(secs => %(n)s - i - 2) END
FROM generate_series(1, %(n)s) AS i;
INSERT INTO {s}.workflow_runs (job_id, status, version, created_at, updated_at)
SELECT i, CASE WHEN i %% 50 = 0 THEN 'running' WHEN i %% 20 = 0 THEN 'failed'
               ELSE 'succeeded' END, 'v1',
       now() - make_interval(secs => %(n)s - i), now() - make_interval(secs => %(n)s - i - 2)
FROM generate_series(1, %(n)s) AS i;
INSERT INTO {s}.workflow_steps (job_id, name, status, result, attempt, updated_at, position,
                                kind, started_at)
SELECT i, 'step-' || k, CASE WHEN i %% 50 = 0 AND k = %(k)s THEN 'waiting' ELSE 'done' END,
       '1'::jsonb, 1, now(), k, CASE WHEN k = %(k)s THEN 'wait' ELSE 'step' END, now()
FROM generate_series(1, %(n)s) AS i, generate_series(1, %(k)s) AS k;
INSERT INTO {s}.jobs (id, queue, task, args, state, attempt, max_attempts, run_at, created_at,
                      attempted_at, finished_at)
OVERRIDING SYSTEM VALUE
SELECT %(n)s + i, 'default', 'billing.nightly', '{{"args": []}}'::jsonb, 'succeeded', 1, 3,
       now(), now(), now() - make_interval(mins => i),
       now() - make_interval(mins => i) + interval '3 seconds'
FROM generate_series(1, %(m)s) AS i;
INSERT INTO {s}.schedule_runs (schedule, fire_at, kind, status, reason, job_id, run_at,
                               recorded_at, finished_at)
SELECT 'nightly', now() - make_interval(mins => i), 'cron',
       CASE WHEN i %% 30 = 0 THEN 'missed' ELSE 'succeeded' END,
       CASE WHEN i %% 30 = 0 THEN 'outside the catch-up window' END,
       CASE WHEN i %% 30 = 0 THEN NULL ELSE %(n)s + i END, now() - make_interval(mins => i),
       now(), now()
FROM generate_series(1, %(m)s) AS i;
ANALYZE {s}.jobs; ANALYZE {s}.workflow_runs; ANALYZE {s}.workflow_steps;
ANALYZE {s}.schedule_runs;
"""

SQLITE_FILL = """
WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < :n)
INSERT INTO jobs (id, queue, task, args, state, attempt, max_attempts, run_at, created_at,
                  attempted_at, finished_at)
SELECT i, 'default', 'flows.order_' || (i % 20), '{"args": []}',
       CASE WHEN i % 50 = 0 THEN 'scheduled' WHEN i % 20 = 0 THEN 'dead' ELSE 'succeeded' END,
       1, 3, :now, :now - (:n - i), :now - (:n - i),
       CASE WHEN i % 50 = 0 THEN NULL ELSE :now - (:n - i) + 2 END FROM g;
WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < :n)
INSERT INTO workflow_runs (job_id, status, version, created_at, updated_at)
SELECT i, CASE WHEN i % 50 = 0 THEN 'running' WHEN i % 20 = 0 THEN 'failed'
               ELSE 'succeeded' END, 'v1', :now - (:n - i), :now - (:n - i) + 2 FROM g;
WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < :n),
               s(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM s WHERE k < :k)
INSERT INTO workflow_steps (job_id, name, status, result, attempt, updated_at, seq, position,
                            kind, started_at)
SELECT i, 'step-' || k, CASE WHEN i % 50 = 0 AND k = :k THEN 'waiting' ELSE 'done' END, '1', 1,
       :now, k, k, CASE WHEN k = :k THEN 'wait' ELSE 'step' END, :now FROM g, s;
WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < :m)
INSERT INTO jobs (id, queue, task, args, state, attempt, max_attempts, run_at, created_at,
                  attempted_at, finished_at)
SELECT :n + i, 'default', 'billing.nightly', '{"args": []}', 'succeeded', 1, 3, :now, :now,
       :now - 60 * i, :now - 60 * i + 3 FROM g;
WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < :m)
INSERT INTO schedule_runs (schedule, fire_at, kind, status, reason, job_id, run_at,
                           recorded_at, finished_at)
SELECT 'nightly', :now - 60 * i, 'cron',
       CASE WHEN i % 30 = 0 THEN 'missed' ELSE 'succeeded' END,
       CASE WHEN i % 30 = 0 THEN 'outside the catch-up window' END,
       CASE WHEN i % 30 = 0 THEN NULL ELSE :n + i END, :now - 60 * i, :now, :now FROM g;
"""


def fill(app: App, engine: str, n: int, k: int, m: int) -> None:
    app.task(name="billing.nightly")(lambda: None)
    app.schedules.add("nightly", "0 2 * * *", "billing.nightly")
    if engine == "postgres":
        import psycopg

        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            for statement in PG_FILL.format(s=app.store.schema).split(";\n"):  # type: ignore[attr-defined]
                if statement.strip():
                    conn.execute(statement, {"n": n, "k": k, "m": m})  # type: ignore[arg-type]
        return
    conn = app.store.conn  # type: ignore[attr-defined]
    params = {"n": n, "k": k, "m": m, "now": time.time()}
    with conn:
        for statement in SQLITE_FILL.split(";\n"):
            if statement.strip():
                conn.execute(statement, params)
    conn.execute("ANALYZE")


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[max(0, int(len(ordered) * 0.95) - 1)]
    return f"p50 {statistics.median(ordered) * 1000:7.1f} ms  p95 {p95 * 1000:7.1f} ms"


def bench(engine: str, n: int, k: int, m: int, runs: int) -> None:
    import httpx
    import uvicorn

    from shiftwork.web import create_dashboard
    from shiftwork.web.serve import server_config

    tmp = tempfile.mkdtemp(prefix="shiftwork-history-")
    schema = f"bench_{uuid.uuid4().hex[:10]}"
    app = (App(f"sqlite:///{tmp}/jobs.db") if engine == "sqlite"
           else App(PG_DSN, schema=schema))
    try:
        app.migrate()
        started = time.perf_counter()
        fill(app, engine, n, k, m)
        print(f"{engine}: {n:,} workflows x {k} steps, {m:,} occurrences, filled in "
              f"{time.perf_counter() - started:.1f} s")
        server = uvicorn.Server(server_config(create_dashboard(app, token=TOKEN), port=0))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        port = server.servers[0].sockets[0].getsockname()[1]
        deep_id = n // 2
        deep_fire = schedules_of(app.store).runs_history("nightly", None, m // 2)[-1].run.fire_at
        pages: dict[str, tuple[str, dict[str, str]]] = {
            "workflows, first page": ("/workflows", {}),
            "workflows, status=running": ("/workflows", {"status": "running"}),
            "workflows, name=ORDER_7": ("/workflows", {"name": "ORDER_7"}),
            "workflows, status=compensating": ("/workflows", {"status": "compensating"}),
            "workflows, name=nothing": ("/workflows", {"name": "nothing"}),
            "workflows, before=n/2": ("/workflows", {"before": str(deep_id)}),
            "workflows, live refresh": ("/workflows", {"live": "1"}),
            "schedule, first page": ("/schedules/nightly", {}),
            "schedule, before=m/2": ("/schedules/nightly", {"before": deep_fire.isoformat()}),
        }
        headers = {"Authorization": f"Bearer {TOKEN}"}
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers,
                          timeout=60) as c:
            for label, (path, params) in pages.items():
                assert c.get(path, params=params).status_code == 200, label  # warm
                samples = []
                for _ in range(runs):
                    t = time.perf_counter()
                    c.get(path, params=params)
                    samples.append(time.perf_counter() - t)
                print(f"  GET {label:<32} {percentiles(samples)}")
        queries: dict[str, Any] = {
            "workflows_page()": lambda: app.store.workflows.page(limit=51),
            "workflows_page(status=running)": lambda: app.store.workflows.page(
                status="running", limit=51),
            "schedule_runs_history()": lambda: schedules_of(app.store).runs_history(
                "nightly", None, 51),
        }
        for label, call in queries.items():
            samples = []
            for _ in range(runs):
                t = time.perf_counter()
                call()
                samples.append(time.perf_counter() - t)
            print(f"  query {label:<30} {percentiles(samples)}")
        server.should_exit = True
        thread.join(10)
    finally:
        if engine == "postgres":
            import psycopg

            with psycopg.connect(PG_DSN, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        app.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default="all", choices=["sqlite", "postgres", "all"])
    parser.add_argument("--workflows", type=int, default=100_000)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--occurrences", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=50)
    a = parser.parse_args()
    for engine in (["sqlite", "postgres"] if a.engine == "all" else [a.engine]):
        bench(engine, a.workflows, a.steps, a.occurrences, a.runs)


if __name__ == "__main__":
    main()
