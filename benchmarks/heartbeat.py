"""What one heartbeat costs a worker holding 200 jobs, before and after it named them.

    python benchmarks/heartbeat.py [--jobs 200] [--n 1000] [--pg postgresql://...]

Per engine: the median and 95th percentile time of one heartbeat, the store's statement
that names the (id, attempt) pairs the worker holds (today's), against the statement
that renewed every running job of the worker (before issue 10), alternating so both see
the same table. (How long an orphaned claim takes to come back: benchmarks/orphans.py.)
"""

from __future__ import annotations

import argparse
import tempfile
import uuid
from typing import Any

from shiftwork import App

from .checkpoint import summary, timed

OLD_SQL = {
    "postgres": """
WITH w AS (UPDATE {schema}.workers SET heartbeat_at = now() WHERE id = %(worker)s)
UPDATE {schema}.jobs SET lease_expires_at = now() + make_interval(secs => %(lease)s)
WHERE worker_id = %(worker)s AND state = 'running'
RETURNING id, attempt, cancel_requested""",
    "sqlite": """
UPDATE jobs SET lease_expires_at = :now + :lease
WHERE worker_id = :worker AND state = 'running'
RETURNING id, attempt, cancel_requested""",
}


def run(label: str, app: App, jobs: int, n: int) -> None:
    @app.task(name="bench.held", queue="bench")
    def held() -> None: ...

    store: Any = app.store
    # History beside the held jobs, as a real table has: other workers' running jobs.
    app.enqueue_many([held.call() for _ in range(jobs * 5)])
    store.jobs.claim("bench", jobs * 4, "someone-else", 3600)
    claimed = store.jobs.claim("bench", jobs, "bench-worker", 3600)
    pairs = [(c.id, c.attempt) for c in claimed]
    assert len(pairs) == jobs
    store.fleet.workers_upsert("bench-worker", "host", 1, {"bench": jobs})
    old_sql = OLD_SQL[store.engine].replace("{schema}", f'"{app.schema}"')

    def new(_: int) -> None:
        assert len(store.jobs.heartbeat("bench-worker", 3600, pairs)) == jobs

    def old(_: int) -> None:
        if store.engine == "postgres":
            with store._conn() as c:
                rows = c.execute(old_sql, {"worker": "bench-worker", "lease": 3600}).fetchall()
        else:
            with store._tx() as c:
                c.execute(store.q["jobs_heartbeat_worker"],
                          {"worker": "bench-worker", "now": store._now()})
                rows = c.execute(old_sql, {"worker": "bench-worker", "now": store._now(),
                                           "lease": 3600}).fetchall()
        assert len(rows) == jobs

    before: list[float] = []
    after: list[float] = []
    timed(new, 0, warmup=50)
    timed(old, 0, warmup=50)
    for _ in range(n):
        before += timed(old, 1, warmup=0)
        after += timed(new, 1, warmup=0)
    print(f"{label}: heartbeat of {jobs}, every running job (before) {summary(before)}")
    print(f"{label}: heartbeat of {jobs}, the pairs held (after)     {summary(after)}")
    ratio = sorted(after)[len(after) // 2] / sorted(before)[len(before) // 2]
    print(f"{label}: after / before (medians)                      {ratio:8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        app = App(f"sqlite:///{tmp}/bench.db")
        app.migrate()
        run("sqlite  ", app, args.jobs, args.n)
        app.close()
    app = App(args.pg, schema=f"bench_{uuid.uuid4().hex[:8]}")
    try:
        app.migrate()
        run("postgres", app, args.jobs, args.n)
    finally:
        app.store.drop_schema()  # type: ignore[attr-defined]
        app.close()


if __name__ == "__main__":
    main()
