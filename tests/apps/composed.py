"""A test app for composition under crashes: groups, chains and dependencies whose tasks
record every execution (job, attempt, pid, phase) in the same database."""

from __future__ import annotations

import os
import time
from typing import Any

from shiftwork import App, Backoff, JobContext, Settings
from tests.apps.side_db import SideConnection

DSN = os.environ["SHIFTWORK_TEST_DSN"]
SCHEMA = os.environ.get("SHIFTWORK_TEST_SCHEMA", "shiftwork")

app = App(DSN, schema=SCHEMA, settings=Settings(
    heartbeat_interval=0.5, lease_seconds=1.5, rescue_interval=0.25, poll_interval=0.2,
    leader_ttl=3.0))
RETRY = Backoff(initial=0.05, maximum=0.2)

_side = SideConnection(DSN)


def effects_table() -> str:
    return "effects" if DSN.startswith("sqlite") else f'"{SCHEMA}".effects'


def create_effects_table() -> None:
    _side.get().execute(f"CREATE TABLE IF NOT EXISTS {effects_table()} "
                        "(job_id bigint, attempt int, pid int, phase text)")


def record(ctx: JobContext, phase: str) -> None:
    mark = "?" if DSN.startswith("sqlite") else "%s"
    _side.get().execute(f"INSERT INTO {effects_table()} VALUES ({mark}, {mark}, {mark}, {mark})",
                        (ctx.job_id, ctx.attempt, os.getpid(), phase))


def effects() -> list[tuple[int, int, int, str]]:
    return [tuple(r) for r in _side.get().execute(  # type: ignore[misc]
        f"SELECT job_id, attempt, pid, phase FROM {effects_table()} ORDER BY job_id, attempt"
    ).fetchall()]


@app.task(queue="work", max_attempts=10, retry=RETRY)
def member(ctx: JobContext, n: int, seconds: float = 0.0) -> int:
    record(ctx, "member")
    time.sleep(seconds)
    return n


@app.task(queue="work", max_attempts=10, retry=RETRY)
def callback(ctx: JobContext, label: str, results: list[Any]) -> int:
    record(ctx, "callback")
    return sum(r for r in results if r is not None)


@app.task(queue="work", max_attempts=10, retry=RETRY)
def link(ctx: JobContext, add: int, seconds: float, previous: int = 0) -> int:
    record(ctx, "link")
    time.sleep(seconds)
    return previous + add


@app.task(queue="work", max_attempts=1)
def once(ctx: JobContext, seconds: float) -> None:
    record(ctx, "once")
    time.sleep(seconds)
