"""A test app for workflow streams and forks, run in real worker processes that are killed.

``SHIFTWORK_TEST_CRASH_AT`` names the boundaries (workflow/hooks.py labels, comma
separated) at which the process kills itself with SIGKILL, once each per workflow: a
marker file in ``SHIFTWORK_TEST_MARKS`` remembers the crash across processes. Every step
records its execution in the side table ``effects`` (job, phase).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

from shiftwork import App, Backoff, Settings, Workflow
from shiftwork.workflow import set_boundary_hook
from tests.apps.side_db import SideConnection

DSN = os.environ["SHIFTWORK_TEST_DSN"]
SCHEMA = os.environ.get("SHIFTWORK_TEST_SCHEMA", "shiftwork")

app = App(DSN, schema=SCHEMA, settings=Settings(
    heartbeat_interval=0.3, lease_seconds=0.9, rescue_interval=0.15, poll_interval=0.1,
    leader_ttl=2.0))

_side = SideConnection(DSN)


def effects_table() -> str:
    return "effects" if DSN.startswith("sqlite") else f'"{SCHEMA}".effects'


def create_effects_table() -> None:
    _side.get().execute(f"CREATE TABLE IF NOT EXISTS {effects_table()} "
                        "(job_id bigint, phase text)")


def effects(job_id: int) -> list[str]:
    m = _side.mark
    return [r[0] for r in _side.get().execute(
        f"SELECT phase FROM {effects_table()} WHERE job_id = {m}", (job_id,)).fetchall()]


def _record(job_id: int, phase: str) -> str:
    m = _side.mark
    _side.get().execute(f"INSERT INTO {effects_table()} VALUES ({m}, {m})", (job_id, phase))
    return phase


def _crash(workflow_id: int, label: str) -> None:
    if label not in os.environ.get("SHIFTWORK_TEST_CRASH_AT", "").split(","):
        return
    marks = Path(os.environ["SHIFTWORK_TEST_MARKS"])
    mark = marks / f"{workflow_id}-{label.replace(':', '_')}"
    if mark.exists():
        return
    mark.touch()
    os.kill(os.getpid(), signal.SIGKILL)  # no cleanup, no hand-back: a real crash


set_boundary_hook(_crash)


@app.workflow(max_attempts=20, retry=Backoff(initial=0.05, maximum=0.2))
def stream_out(wf: Workflow, n: int) -> int:
    for i in range(n):
        # (the id is not a step argument: a fork's digest must match the original's)
        value = wf.step(f"make-{i}", lambda i=i: _record(wf.id, f"make-{i}"))
        wf.write_stream("out", value)
    wf.close_stream("out")
    return n


@app.workflow(max_attempts=20, retry=Backoff(initial=0.05, maximum=0.2))
def pipeline(wf: Workflow, name: str) -> list[Any]:
    a = wf.step("extract", lambda: _record(wf.id, "extract"))
    b = wf.step("transform", lambda: _record(wf.id, "transform"))
    c = wf.step("load", lambda: _record(wf.id, "load"))
    return [name, a, b, c]
