"""What a checkpoint costs, and what skipping paused queues adds to a claim.

    python benchmarks/checkpoint.py [--n 2000] [--pg postgresql://...]

Per engine: the median and 95th percentile time of one ``ctx.checkpoint(cursor)``
(one fenced UPDATE ... RETURNING, a durable commit), of ``ctx.transaction()`` with a
checkpoint and an effect key, and of one claim of one job with and without the
paused-queue filter (the claims alternate, so both see the same table).
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from typing import Any

from shiftwork import App, JobContext


def timed(fn: Callable[[int], Any], n: int, warmup: int = 50) -> list[float]:
    for i in range(warmup):
        fn(-i - 1)
    out = []
    for i in range(n):
        start = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - start) * 1e6)
    return out


def summary(samples: list[float]) -> str:
    samples = sorted(samples)
    p95 = samples[int(len(samples) * 0.95) - 1]
    return f"median {statistics.median(samples):8.0f} µs   p95 {p95:8.0f} µs"


def without_pause_filter(text: str) -> str:
    return re.sub(r"\n\s*-- a paused queue.*?s\.paused\)", "", text, flags=re.S)


def unfiltered_claim(app: App, statement: str) -> str:
    """The claim statement without the paused-queue filter. PostgreSQL's statement calls
    the server function claim_jobs (migrations/functions.sql): a copy of it without the
    filter is created beside it, and called instead."""
    if app.store.engine != "postgres":
        return without_pause_filter(statement)
    with app.store.transaction() as c:
        [definition] = c.execute(
            "SELECT pg_get_functiondef(p.oid) FROM pg_proc p JOIN pg_namespace n "
            "ON n.oid = p.pronamespace WHERE n.nspname = %s AND p.proname = 'claim_jobs'",
            (app.schema,)).fetchone()
        copy = without_pause_filter(definition)
        assert copy != definition, "could not find the paused-queue filter in claim_jobs"
        c.execute(copy.replace(".claim_jobs(", ".claim_jobs_unfiltered(", 1))
    return statement.replace(".claim_jobs(", ".claim_jobs_unfiltered(")


def run(label: str, app: App, n: int) -> None:
    app.migrate()

    @app.task(name="bench.long", queue="bench")
    def long(ctx: JobContext) -> None: ...

    long.enqueue()
    [c] = app.store.jobs.claim("bench", 1, "bench-worker", 3600)
    ctx = JobContext(app.runtime, c.id, c.task, c.queue, c.attempt, c.max_attempts)
    samples = timed(lambda i: ctx.checkpoint({"after": i, "done": i}), n)
    print(f"{label}: ctx.checkpoint(cursor)            {summary(samples)}")

    def in_tx(i: int) -> None:
        with ctx.transaction() as tx:
            tx.once(f"bench:{uuid.uuid4().hex}", lambda: i)
            tx.checkpoint({"after": i})

    print(f"{label}: transaction + once + checkpoint {summary(timed(in_tx, max(n // 4, 100)))}")

    claims = max(n // 2, 200)
    app.enqueue_many([long.call() for _ in range(2 * claims + 200)])
    store: Any = app.store
    with_filter = store.q["jobs_claim"]
    plain = unfiltered_claim(app, with_filter)
    assert plain != with_filter, "could not find the paused-queue filter in jobs_claim"
    filtered: list[float] = []
    unfiltered: list[float] = []

    def claim(text: str, into: list[float]) -> None:
        store.q["jobs_claim"] = text
        start = time.perf_counter()
        got = store.jobs.claim("bench", 1, "bench-worker", 3600)
        into.append((time.perf_counter() - start) * 1e6)
        assert len(got) == 1

    for _ in range(50):
        claim(with_filter, [])
    for _ in range(claims):
        claim(with_filter, filtered)
        claim(plain, unfiltered)
    store.q["jobs_claim"] = with_filter
    print(f"{label}: claim 1 job, pause filter       {summary(filtered)}")
    print(f"{label}: claim 1 job, no filter          {summary(unfiltered)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        app = App(f"sqlite:///{tmp}/bench.db")
        run("sqlite  ", app, args.n)
        app.close()
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    app = App(args.pg, schema=schema)
    try:
        run("postgres", app, args.n)
    finally:
        app.store.drop_schema()  # type: ignore[attr-defined]
        app.close()


if __name__ == "__main__":
    main()
