"""A test app for quiet failures (issue 36), run in real worker processes.

A report scheduled every second processes as many rows as the file
``$QUIET_DIR/rows`` says (0: the nightly report that has been empty since a deploy) and
expects at least one. The leader's ``on_schedule_empty`` hook appends one line per
alert to ``$QUIET_DIR/alerts`` (``<schedule> <fire instant> <pid>``), so a test sees
every alert of every process.
"""

from __future__ import annotations

import os
from pathlib import Path

from shiftwork import App, JobContext, Settings
from shiftwork.model.records import EmptyRun
from shiftwork.schedules.definition import iso_z

DSN = os.environ["SHIFTWORK_TEST_DSN"]
SCHEMA = os.environ.get("SHIFTWORK_TEST_SCHEMA", "shiftwork")
DIR = Path(os.environ.get("QUIET_DIR", "."))

app = App(DSN, schema=SCHEMA, settings=Settings(
    heartbeat_interval=0.5, lease_seconds=1.5, rescue_interval=0.25, poll_interval=0.2,
    leader_ttl=1.5))


@app.periodic("* * * * * *", name="nightly-report", queue="reports", overlap="allow_all",
              expect_items=1)
def nightly_report(ctx: JobContext) -> int:
    rows = int((DIR / "rows").read_text() or 0)
    ctx.processed(rows)  # 0 since the deploy: the run still succeeds
    return rows


@app.on_schedule_empty
def alert(run: EmptyRun) -> None:
    with open(DIR / "alerts", "a") as f:  # one short append per line: never interleaved
        f.write(f"{run.schedule} {iso_z(run.fire_at)} {os.getpid()}\n")
