"""A test app with schedules firing every second, run in real worker processes.

SHIFTWORK_TEST_SCHEDULES picks which: "race" (one schedule, catch-up all, overlap
allow_all), "downtime" (one schedule per catch-up policy) or "runtime" (one code schedule;
the test adds its run-time ones with app.schedules.add, which worker starts must keep).
"""

from __future__ import annotations

import os

from shiftwork import App, Settings

DSN = os.environ["SHIFTWORK_TEST_DSN"]
SCHEMA = os.environ.get("SHIFTWORK_TEST_SCHEMA", "shiftwork")
WHICH = os.environ.get("SHIFTWORK_TEST_SCHEDULES", "race")

app = App(DSN, schema=SCHEMA, settings=Settings(
    heartbeat_interval=0.5, lease_seconds=1.5, rescue_interval=0.25, poll_interval=0.2,
    leader_ttl=1.5))


@app.task(queue="sched", name="tick")
def tick() -> None:
    pass


if WHICH == "race":
    app.schedule("every-second", "* * * * * *", tick, catchup="all", catchup_window=120,
                 overlap="allow_all")
elif WHICH == "runtime":
    app.schedule("code-minutely", "* * * * *", tick)
else:
    for policy in ("skip", "latest", "all"):
        app.schedule(f"down-{policy}", "* * * * * *", tick, catchup=policy,
                     catchup_window=120 if policy == "all" else None, overlap="allow_all")
