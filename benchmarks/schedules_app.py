"""The app the schedules benchmark's worker process runs (``benchmarks.schedules_app:app``).

``BENCH_SCHEDULES`` schedules, yearly (so no natural boundary falls inside a run),
enqueueing into queue ``bsched`` (which no worker serves, so the jobs stay put); each
``schedule.fired`` event (emitted after the firing transaction commits) is recorded
with its lateness: wall clock minus fire instant.
"""

from __future__ import annotations

import os
import time
from datetime import datetime
from typing import Any

from shiftwork import App, Settings

from .recorder import record


def tick() -> None:
    pass


def make_app(dsn: str, schema: str, count: int) -> App:
    a = App(dsn, schema=schema, settings=Settings(), auto_migrate=False)
    task = a.task(name="bench.sched_tick", queue="bsched", max_attempts=1)(tick)
    a.task(name="bench.idle", queue="bidle", max_attempts=1)(tick)
    for i in range(count):
        a.schedule(f"b-{i:06d}", "0 0 0 1 1 *", task, overlap="allow_all")
    return a


def _fired(name: str, fields: dict[str, Any]) -> None:
    if name == "schedule.fired":
        late = time.time() - datetime.fromisoformat(fields["fire_at"]).timestamp()
        record("f", fields["schedule"], f"{late:.6f}")


app = make_app(os.environ.get("BENCH_DSN", "sqlite:///bench.db"),
               os.environ.get("BENCH_SCHEMA", "shiftwork"),
               int(os.environ.get("BENCH_SCHEDULES", "0")))
app.events.subscribe(_fired)
