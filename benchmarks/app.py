"""The shiftwork app the benchmark's worker processes run (``benchmarks.app:app``)."""

from __future__ import annotations

import os
import time

from shiftwork import App, JobContext, Settings

from .recorder import record


def noop(ctx: JobContext) -> None:
    """Drain, mixed flood and memory runs: note that this job ran, and nothing else."""
    record("d", ctx.job_id, ctx.attempt)


def stamp(ctx: JobContext, sent: float) -> None:
    """Latency runs: enqueue-to-start in ms, against the enqueue time the job carries."""
    record("l", ctx.job_id, (time.time() - sent) * 1000.0, now=True)


def make_app(dsn: str, schema: str) -> App:
    a = App(dsn, schema=schema, settings=Settings(), auto_migrate=False)
    a.task(noop, name="bench.noop", queue="bench", max_attempts=1)
    a.task(stamp, name="bench.stamp", queue="urgent", max_attempts=1)
    return a


app = make_app(os.environ.get("BENCH_DSN", "sqlite:///bench.db"),
               os.environ.get("BENCH_SCHEMA", "shiftwork"))
