"""A release of an app before it added a task (tests/test_rolling_deploy.py)."""

import os

from shiftwork import App

app = App(os.environ["SHIFTWORK_TEST_DSN"], schema=os.environ.get("SHIFTWORK_TEST_SCHEMA",
                                                                  "shiftwork"))


@app.task(name="billing.send_reminder", max_attempts=1)
def send_reminder(customer: int) -> int:
    return customer
