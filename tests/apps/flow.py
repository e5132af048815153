"""A test app for flow control: tasks under a rate limit and a group cap that record when
each job started and finished, in the same database. Run in real worker processes."""

from __future__ import annotations

import os
import time
from typing import Any

from shiftwork import App, JobContext, Settings
from tests.apps.side_db import SideConnection

DSN = os.environ["SHIFTWORK_TEST_DSN"]
SCHEMA = os.environ.get("SHIFTWORK_TEST_SCHEMA", "shiftwork")

app = App(DSN, schema=SCHEMA, settings=Settings(
    heartbeat_interval=0.5, lease_seconds=1.5, rescue_interval=0.25, poll_interval=0.2,
    leader_ttl=3.0))

_side = SideConnection(DSN)


def _conn() -> Any:
    return _side.get()


def table() -> str:
    return "starts" if DSN.startswith("sqlite") else f'"{SCHEMA}".starts'


def create_table() -> None:
    _conn().execute(f"CREATE TABLE IF NOT EXISTS {table()} "
                    "(job_id bigint, grp text, started double precision, ended double precision)")


def _record(job_id: int, grp: str, started: float, ended: float | None) -> None:
    mark = "?" if DSN.startswith("sqlite") else "%s"
    _conn().execute(f"INSERT INTO {table()} VALUES ({mark}, {mark}, {mark}, {mark})",
                    (job_id, grp, started, ended))


@app.task(queue="limited", rate_limit="20/s", max_attempts=3)
def limited(ctx: JobContext, n: int) -> None:
    now = time.time()
    _record(ctx.job_id, "", now, now)


@app.task(queue="grouped", group_by="account", group_concurrency=1, max_attempts=3)
def per_account(ctx: JobContext, account: str, seconds: float) -> None:
    started = time.time()
    time.sleep(seconds)
    _record(ctx.job_id, account, started, time.time())


app.queue("fair", fair=True)
app.queue("guarded", fair=True)  # fair, under a rate and a cap: every limit at once


@app.task(queue="fair", group_by="account", max_attempts=3)
def fair_job(ctx: JobContext, account: str) -> None:
    now = time.time()
    _record(ctx.job_id, account, now, now)


@app.task(queue="guarded", rate_limit="20/s", group_by="account", group_concurrency=1,
          max_attempts=5)
def guarded(ctx: JobContext, account: str, seconds: float) -> None:
    # The start is written first, so a run cut short by SIGKILL still counts against the rate.
    started = time.time()
    _record(ctx.job_id, account, started, None)
    time.sleep(seconds)
    mark = "?" if DSN.startswith("sqlite") else "%s"
    _conn().execute(f"UPDATE {table()} SET ended = {mark} WHERE job_id = {mark} "
                    f"AND started = {mark}", (time.time(), ctx.job_id, started))
