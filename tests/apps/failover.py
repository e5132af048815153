"""The failover test's app (tests/test_failover.py): jobs and a schedule firing every
second, whose runs and acknowledged completions are written to files, not the database,
so a record survives whatever an asynchronous standby lost.

Each worker process appends to ``$SHIFTWORK_TEST_RECORDS/<pid>.log`` one line per event,
``<phase> <label> <job id> <attempt>``: phase ``start`` when a run begins, ``acked`` when
the completer wrote its success and the database said so. The label names the job by
what it is, not its id (an id an asynchronous standby lost may be handed out again):
``n-<n>`` for ``work(n)``, its unique key's suffix; ``tick@<fire instant>`` for the
schedule's occurrences.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from shiftwork import App, JobContext, Settings

DSN = os.environ["SHIFTWORK_TEST_DSN"]
SCHEMA = os.environ.get("SHIFTWORK_TEST_SCHEMA", "shiftwork")
RECORDS = Path(os.environ.get("SHIFTWORK_TEST_RECORDS", "."))

app = App(DSN, schema=SCHEMA, settings=Settings(
    heartbeat_interval=0.5, lease_seconds=1.5, rescue_interval=0.25, poll_interval=0.2,
    leader_ttl=1.5))

_lock = threading.Lock()
_file: Any = None
_labels: dict[tuple[int, int], str] = {}  # (job id, attempt) -> label, until acked


def record(phase: str, label: str, job_id: int, attempt: int) -> None:
    global _file
    with _lock:
        if _file is None:
            _file = open(RECORDS / f"{os.getpid()}.log", "a", buffering=1)  # noqa: SIM115
        _file.write(f"{phase} {label} {job_id} {attempt}\n")


def _start(ctx: JobContext, label: str) -> None:
    with _lock:
        _labels[(ctx.job_id, ctx.attempt)] = label
    record("start", label, ctx.job_id, ctx.attempt)


@app.task(queue="work", name="work", max_attempts=20)
def work(ctx: JobContext, n: int, seconds: float = 0.0) -> int:
    _start(ctx, f"n-{n}")
    if seconds:
        time.sleep(seconds)
    return n


@app.task(queue="work", name="tick", max_attempts=20)
def tick(ctx: JobContext) -> None:
    _start(ctx, f"tick@{ctx.meta['fire_at']}")


app.schedule("every-second", "* * * * * *", tick, catchup="all", catchup_window=120,
             overlap="allow_all")


def _acked(name: str, fields: dict[str, Any]) -> None:
    if name == "job.succeeded":
        with _lock:
            label = _labels.pop((fields["job_id"], fields["attempt"]), "?")
        record("acked", label, fields["job_id"], fields["attempt"])


app.events.subscribe(_acked)
