"""A test app with a batch task that records each item it is called with (job, attempt,
pid, the call's size); in a worker started with BATCH_TEST_HANG=1 every call hangs, so
a test can kill it mid-batch (tests/test_batching.py)."""

from __future__ import annotations

import os
import time
from typing import Any

from shiftwork import App, Batch, BatchItem, Settings
from tests.apps.side_db import SideConnection

DSN = os.environ["SHIFTWORK_TEST_DSN"]
SCHEMA = os.environ.get("SHIFTWORK_TEST_SCHEMA", "shiftwork")

app = App(DSN, schema=SCHEMA, settings=Settings(
    heartbeat_interval=0.5, lease_seconds=1.5, rescue_interval=0.25, poll_interval=0.2,
    leader_ttl=3.0))

_side = SideConnection(DSN)


def calls_table() -> str:
    return "batch_calls" if DSN.startswith("sqlite") else f'"{SCHEMA}".batch_calls'


def create_calls_table() -> None:
    _side.get().execute(f"CREATE TABLE IF NOT EXISTS {calls_table()} "
                        "(job_id bigint, attempt int, pid int, size int)")


def calls() -> list[tuple[int, int, int, int]]:
    return [tuple(r) for r in _side.get().execute(  # type: ignore[misc]
        f"SELECT job_id, attempt, pid, size FROM {calls_table()} ORDER BY job_id, attempt"
    ).fetchall()]


@app.task(queue="batched", batch=Batch(size=10, timeout=0.2), max_attempts=5)
def collect(items: list[BatchItem]) -> list[Any]:
    m = _side.mark
    for item in items:
        _side.get().execute(f"INSERT INTO {calls_table()} VALUES ({m}, {m}, {m}, {m})",
                            (item.job_id, item.attempt, os.getpid(), len(items)))
    if os.environ.get("BATCH_TEST_HANG") == "1":
        time.sleep(120)  # the worker is killed here
    return [item.args[0] for item in items]
