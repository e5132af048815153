"""A test app for the visibility commands: one queue declares how long its jobs may wait."""

from __future__ import annotations

import os

from shiftwork import App

app = App(os.environ["SHIFTWORK_TEST_DSN"], schema=os.environ.get("SHIFTWORK_TEST_SCHEMA",
                                                                   "shiftwork"))
app.queue("emails", max_wait=60)


@app.task(name="send", queue="emails")
def send(to: str) -> None: ...


@app.task(name="report", queue="reports")
def report(n: int) -> int:
    return n
