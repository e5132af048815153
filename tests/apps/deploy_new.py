"""The next release of tests/apps/deploy_old.py: the same task, and a new one."""

import os

from shiftwork import App

app = App(os.environ["SHIFTWORK_TEST_DSN"], schema=os.environ.get("SHIFTWORK_TEST_SCHEMA",
                                                                  "shiftwork"))


@app.task(name="billing.send_reminder", max_attempts=1)
def send_reminder(customer: int) -> int:
    return customer


@app.task(name="billing.send_invoice", max_attempts=1)
def send_invoice(customer: int) -> int:
    return customer
