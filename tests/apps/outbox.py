"""A test app for enqueue from SQL: the task an ``orders`` table's trigger enqueues
(tests/test_sql_enqueue.py), run by real worker processes."""

from __future__ import annotations

import os

from shiftwork import App, Settings

DSN = os.environ["SHIFTWORK_TEST_DSN"]
SCHEMA = os.environ.get("SHIFTWORK_TEST_SCHEMA", "shiftwork")

app = App(DSN, schema=SCHEMA, settings=Settings(
    heartbeat_interval=0.5, lease_seconds=1.5, rescue_interval=0.25, poll_interval=30.0,
    leader_ttl=2.0))


@app.task(name="send_receipt", queue="receipts", max_attempts=4)
def send_receipt(order_id: int) -> dict[str, int]:
    return {"order_id": order_id, "pid": os.getpid()}
