"""procrastinate's side of the benchmark: the same two tasks, async (its natural form)."""

from __future__ import annotations

import os
import time

import procrastinate
from psycopg.conninfo import make_conninfo

from ..recorder import record, started

_dsn = os.environ.get("SHIFTWORK_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/test")
app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=make_conninfo(
    _dsn, options=f"-c search_path={os.environ.get('BENCH_SCHEMA', 'public')}")))


@app.task(name="noop", queue="bench", pass_context=True)
async def noop(context: procrastinate.JobContext) -> None:
    started(context.job.id if context.job else None)


@app.task(name="stamp", queue="urgent", pass_context=True)
async def stamp(context: procrastinate.JobContext, sent: float) -> None:
    assert context.job is not None
    record("l", context.job.id, (time.time() - sent) * 1000.0, now=True)
