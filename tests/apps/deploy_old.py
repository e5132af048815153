"""A release of an app before it added a task (tests/test_rolling_deploy.py)."""

import os

from shiftwork import App, Settings

# Short timings: health's grace for a task no live worker registers is a worker's
# staleness (3 heartbeats or a lease), 15 s at the defaults.
app = App(os.environ["SHIFTWORK_TEST_DSN"],
          schema=os.environ.get("SHIFTWORK_TEST_SCHEMA", "shiftwork"),
          settings=Settings(heartbeat_interval=1.0, lease_seconds=5.0, rescue_interval=0.25,
                            poll_interval=0.2, leader_ttl=2.0))


@app.task(name="billing.send_reminder", max_attempts=1)
def send_reminder(customer: int) -> int:
    return customer
