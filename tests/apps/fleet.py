"""A test app for fleet behaviour: its connection budget, wake-ups across processes and
PgBouncer. Env: SHIFTWORK_TEST_POOL_MAX_IDLE (seconds), SHIFTWORK_TEST_PGBOUNCER=1,
SHIFTWORK_TEST_LISTEN_DSN, SHIFTWORK_TEST_POLL (poll interval, seconds)."""

from __future__ import annotations

import os
import time

from shiftwork import App, Settings

DSN = os.environ["SHIFTWORK_TEST_DSN"]
SCHEMA = os.environ.get("SHIFTWORK_TEST_SCHEMA", "shiftwork")

app = App(DSN, schema=SCHEMA, pool_size=int(os.environ.get("SHIFTWORK_TEST_POOL_SIZE", "10")),
          pgbouncer=os.environ.get("SHIFTWORK_TEST_PGBOUNCER") == "1",
          listen_dsn=os.environ.get("SHIFTWORK_TEST_LISTEN_DSN") or None,
          settings=Settings(  # the default timings: an idle worker's background ticks
              poll_interval=float(os.environ.get("SHIFTWORK_TEST_POLL", "1.0")),
              pool_max_idle=float(os.environ.get("SHIFTWORK_TEST_POOL_MAX_IDLE", "30"))))


@app.task(queue="fleet")
def nap(seconds: float) -> None:
    time.sleep(seconds)


@app.task(queue="fleet")
def noop() -> None:
    return None
