"""A test app for long jobs: a keyset backfill over a table, and a charge made once.

Run in real worker processes by tests/test_long_jobs_chaos.py, which kills, stops and
cancels them. Tables (created by the tests): ``lj_items(id, value, doubled)``, ``lj_log(id,
attempt)`` (one row per row processed, duplicates included), ``lj_charges(customer,
period, attempt)`` and ``lj_marks(job_id, attempt, phase)``.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from typing import Any

import psycopg

from shiftwork import App, Backoff, JobContext, Settings
from shiftwork.core.errors import LeaseLost

DSN = os.environ["SHIFTWORK_TEST_DSN"]
SCHEMA = os.environ.get("SHIFTWORK_TEST_SCHEMA", "shiftwork")
HEARTBEAT = float(os.environ.get("SHIFTWORK_TEST_HEARTBEAT", "0.5"))
SQLITE = DSN.startswith("sqlite")

app = App(DSN, schema=SCHEMA, settings=Settings(
    heartbeat_interval=HEARTBEAT, lease_seconds=max(HEARTBEAT * 3, 1.5),
    rescue_interval=0.25, poll_interval=0.2, leader_ttl=3.0))

_local = threading.local()


def table(name: str) -> str:
    return name if SQLITE else f'"{SCHEMA}".{name}'


def sql(text: str) -> str:
    """Queries here are written with ``?``; psycopg wants ``%s``."""
    return text if SQLITE else text.replace("?", "%s")


def conn() -> Any:
    """This thread's own autocommit connection (not the queue's), for the task's work."""
    c = getattr(_local, "conn", None)
    if c is None:
        if SQLITE:
            c = sqlite3.connect(DSN.split(":///", 1)[1], timeout=30, isolation_level=None)
        else:
            c = psycopg.connect(DSN, autocommit=True)
        _local.conn = c
    return c


def mark(ctx: JobContext, phase: str) -> None:
    conn().execute(sql(f"INSERT INTO {table('lj_marks')} VALUES (?, ?, ?)"),
                   (ctx.job_id, ctx.attempt, phase))


def _fetch(after: int | None, n: int) -> list[tuple[int, int]]:
    return [tuple(r) for r in conn().execute(  # type: ignore[misc]
        sql(f"SELECT id, value FROM {table('lj_items')} WHERE id > ? ORDER BY id LIMIT ?"),
        (after or 0, n)).fetchall()]


def _process(execute: Any, first: int, last: int, attempt: int) -> None:
    execute(sql(f"UPDATE {table('lj_items')} SET doubled = value * 2 WHERE id BETWEEN ? AND ?"),
            (first, last))
    execute(sql(f"INSERT INTO {table('lj_log')} SELECT id, ? FROM {table('lj_items')} "
                "WHERE id BETWEEN ? AND ?"), (attempt, first, last))


@app.task(queue="backfill", max_attempts=20, retry=Backoff(initial=0.05, maximum=0.2))
def backfill(ctx: JobContext, total: int, size: int = 1000, pace: float = 0.0,
             transactional: bool = False) -> int:
    """Double every item's value, ``size`` rows a batch, resuming from the checkpoint."""
    for batch in ctx.batches(_fetch, key=lambda row: row[0], size=size, total=total,
                             message="doubling values"):
        first, last = batch[0][0], batch[-1][0]
        if transactional:  # the batch's writes and its cursor commit together
            with ctx.transaction() as tx:
                _process(tx.execute, first, last, ctx.attempt)
                tx.checkpoint(batch.cursor)
        else:
            _process(conn().execute, first, last, ctx.attempt)
        if pace:
            time.sleep(pace)
    return int(ctx.last_checkpoint["done"]) if ctx.last_checkpoint else 0


@app.task(queue="billing", max_attempts=10, retry=Backoff(initial=0.05, maximum=0.2))
def charge(ctx: JobContext, customer: str, period: str, hold: float = 0.0,
           hold_inside: bool = False) -> Any:
    """Charge ``customer`` for ``period`` once, however often the job runs.

    The first attempt holds for ``hold`` seconds before its transaction (or inside it,
    after the effect, with ``hold_inside``) so that a test can stop its process there.
    """
    mark(ctx, "started")
    if ctx.attempt == 1 and hold and not hold_inside:
        mark(ctx, "holding")
        time.sleep(hold)

    def effect(tx: Any) -> Any:
        tx.execute(sql(f"INSERT INTO {table('lj_charges')} VALUES (?, ?, ?)"),
                   (customer, period, ctx.attempt))
        return {"charged_by_attempt": ctx.attempt}

    try:
        with ctx.transaction() as tx:
            result = tx.once(f"charge:{customer}:{period}", lambda: effect(tx))
            if ctx.attempt == 1 and hold and hold_inside:
                mark(ctx, "holding")
                time.sleep(hold)
    except LeaseLost:
        mark(ctx, "lease_lost")
        raise
    mark(ctx, "committed")
    return result
