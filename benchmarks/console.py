"""The operations console at scale: a filtered jobs page and a bulk retry, per engine.

    python -m benchmarks.console [--jobs 1000000] [--dead 100000] [--engines sqlite,postgres]
                                 [--pages 20] [--retries 3]

Fills a fresh database with ``--jobs`` jobs in one SQL statement (five queues, twenty
tasks; ``--dead`` of them dead, half of those with a "timeout" error; one in ten
tagged; the rest succeeded or waiting), then times:

- a filtered page as the dashboard's ``/jobs`` reads it (one page of 51 rows and the
  total counted up to 10,001), for several filters, ``--pages`` times each: p50, p95, max;
- a bulk retry by filter of every dead job (``bulk_apply``: batches of 1,000, each its
  own transaction), ``--retries`` times (the jobs are made dead again between runs);
- then a bulk cancel of every waiting job (the retried ones and the tenth never run).

The figures are from whatever machine runs it; on a shared one, say so beside them.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from .common import load, percentiles, place

FILTERS: dict[str, dict[str, str]] = {
    "dead billing timeout": {"state": "dead", "queue": "billing", "error": "timeout"},
    "task part": {"task": "charge"},
    "task part, another": {"task": "task_19"},
    "tag": {"tag": "customer:43"},
    "state succeeded, sort finished": {"state": "succeeded"},
    "created range": {"created_from": "", "created_to": ""},  # the middle tenth, set below
    "unique key": {"unique_key": "key-500000"},
}

_PG_FILL = """
INSERT INTO {schema}.jobs (queue, task, args, state, max_attempts, attempt, run_at,
                           created_at, finished_at, errors, meta, unique_key)
SELECT (ARRAY['billing', 'mail', 'reports', 'imports', 'default'])[1 + i %% 5],
       CASE WHEN i %% 20 = 0 THEN 'dashapp.charge_customer' ELSE 'bench.task_' || (i %% 20) END,
       '{"args": []}',
       CASE WHEN i <= %(dead)s THEN 'dead' WHEN i %% 10 = 0 THEN 'available'
            ELSE 'succeeded' END,
       3, 1, t, t, CASE WHEN i %% 10 = 0 AND i > %(dead)s THEN NULL ELSE t END,
       CASE WHEN i <= %(dead)s THEN jsonb_build_array(jsonb_build_object(
            'type', CASE WHEN i %% 2 = 0 THEN 'TimeoutError' ELSE 'BankError' END,
            'message', CASE WHEN i %% 2 = 0 THEN 'timeout after 30 s' ELSE 'card declined' END,
            'kind', 'error', 'attempt', 1)) ELSE '[]'::jsonb END,
       CASE WHEN i %% 10 = 3 THEN jsonb_build_object('tags', jsonb_build_array(
            'customer:' || (i %% 1000))) ELSE '{}'::jsonb END,
       CASE WHEN i %% 10 = 0 AND i > %(dead)s THEN 'key-' || i END
FROM generate_series(1, %(jobs)s) AS i,
     LATERAL (SELECT now() - make_interval(secs => (%(jobs)s - i) * 0.1)) AS s(t)
"""

_SQLITE_FILL = """
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :jobs)
INSERT INTO jobs (queue, task, args, state, max_attempts, attempt, run_at, created_at,
                  finished_at, errors, meta, unique_key)
SELECT CASE i % 5 WHEN 0 THEN 'billing' WHEN 1 THEN 'mail' WHEN 2 THEN 'reports'
                  WHEN 3 THEN 'imports' ELSE 'default' END,
       CASE WHEN i % 20 = 0 THEN 'dashapp.charge_customer' ELSE 'bench.task_' || (i % 20) END,
       '{"args": []}',
       CASE WHEN i <= :dead THEN 'dead' WHEN i % 10 = 0 THEN 'available' ELSE 'succeeded' END,
       3, 1, :now - (:jobs - i) * 0.1, :now - (:jobs - i) * 0.1,
       CASE WHEN i % 10 = 0 AND i > :dead THEN NULL ELSE :now - (:jobs - i) * 0.1 END,
       CASE WHEN i <= :dead THEN json_array(json_object(
            'type', CASE WHEN i % 2 = 0 THEN 'TimeoutError' ELSE 'BankError' END,
            'message', CASE WHEN i % 2 = 0 THEN 'timeout after 30 s' ELSE 'card declined' END,
            'kind', 'error', 'attempt', 1)) ELSE '[]' END,
       CASE WHEN i % 10 = 3 THEN json_object('tags', json_array('customer:' || (i % 1000)))
            ELSE '{}' END,
       CASE WHEN i % 10 = 0 AND i > :dead THEN 'key-' || i END
FROM n
"""


def _fill(app: Any, jobs: int, dead: int) -> None:
    store = app.store
    if store.engine == "sqlite":
        with store.conn:
            store.conn.execute(_SQLITE_FILL, {"jobs": jobs, "dead": dead, "now": time.time()})
        return
    import psycopg

    with psycopg.connect(app.dsn, autocommit=True) as c:
        c.execute(_PG_FILL.replace("{schema}", f'"{app.schema}"'),  # type: ignore[arg-type]
                  {"jobs": jobs, "dead": dead})
        c.execute(f'ANALYZE "{app.schema}".jobs')


def _redead(app: Any) -> None:
    """The retried jobs dead again, for the next run."""
    store = app.store
    text = "UPDATE {t} SET state = 'dead', finished_at = run_at WHERE state = 'available' " \
           "AND errors <> '[]'"
    if store.engine == "sqlite":
        with store.conn:
            store.conn.execute(text.format(t="jobs"))
        return
    import psycopg

    with psycopg.connect(app.dsn, autocommit=True) as c:
        c.execute(text.format(t=f'"{app.schema}".jobs').replace("'[]'", "'[]'::jsonb"))


def one(engine: str, jobs: int, dead: int, pages: int, retries: int) -> dict[str, Any]:
    from datetime import UTC, datetime, timedelta

    from shiftwork import App
    from shiftwork.jobs.bulk import bulk_apply
    from shiftwork.model.filter import parse_filter
    from shiftwork.web.jobs_console import COUNT_CAP, PAGE

    out: dict[str, Any] = {"engine": engine, "jobs": jobs, "dead": dead}
    with place(engine) as pl:
        app = App(pl.dsn, schema=pl.schema)
        try:
            app.migrate()
            t = time.perf_counter()
            _fill(app, jobs, dead)
            out["fill_s"] = round(time.perf_counter() - t, 1)
            now = datetime.now(UTC)
            middle = now - timedelta(seconds=jobs * 0.1 / 2)
            FILTERS["created range"] = {
                "created_from": middle.isoformat(),
                "created_to": (middle + timedelta(seconds=jobs * 0.01)).isoformat()}
            out["pages_ms"] = {}
            for name, given in FILTERS.items():
                f = parse_filter(given)
                sort = "finished" if "sort finished" in name else "created"
                times = []
                for _ in range(pages):
                    t = time.perf_counter()
                    found = app.store.console.page(f, sort, None, PAGE + 1)
                    count = app.store.console.count_upto(f, COUNT_CAP + 1)
                    times.append((time.perf_counter() - t) * 1000)
                stats = percentiles(times)
                out["pages_ms"][name] = {k: round(v, 1) for k, v in stats.items()} | {
                    "rows": len(found), "total": count}
            runs = []
            for run in range(retries):
                if run:
                    _redead(app)
                t = time.perf_counter()
                result = bulk_apply(app, "retry", parse_filter({"state": "dead"}), "bench")
                runs.append(time.perf_counter() - t)
                out["retried"] = result.done
            out["bulk_retry_s"] = [round(r, 2) for r in runs]
            # every waiting job (the retried ones and the tenth never run): one bulk cancel
            t = time.perf_counter()
            result = bulk_apply(app, "cancel", parse_filter({"state": "waiting"}), "bench")
            out["bulk_cancel_s"] = round(time.perf_counter() - t, 2)
            out["cancelled"] = result.done
            out["load"] = load()
        finally:
            app.close()
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.console")
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--dead", type=int, default=100_000)
    parser.add_argument("--engines", default="sqlite,postgres")
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--retries", type=int, default=3)
    args = parser.parse_args(argv)
    for engine in args.engines.split(","):
        print(json.dumps(one(engine, args.jobs, args.dead, args.pages, args.retries)),
              flush=True)


if __name__ == "__main__":
    main()
