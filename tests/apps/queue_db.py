"""A test app whose jobs live in a database of their own (SHIFTWORK_TEST_DSN, the queue
database) while their effects go to the application's (SHIFTWORK_TEST_APP_DSN, in the
schema SHIFTWORK_TEST_APP_SCHEMA): docs/deploy.md, "A dedicated queue database"."""

from __future__ import annotations

import os

import psycopg

from shiftwork import App, Settings

app = App(os.environ["SHIFTWORK_TEST_DSN"], schema=os.environ.get("SHIFTWORK_TEST_SCHEMA",
                                                                  "shiftwork"),
          settings=Settings(heartbeat_interval=0.5, lease_seconds=1.5, rescue_interval=0.25,
                            poll_interval=0.2, leader_ttl=3.0))
APP_DSN = os.environ.get("SHIFTWORK_TEST_APP_DSN", "")
APP_SCHEMA = os.environ.get("SHIFTWORK_TEST_APP_SCHEMA", "public")


@app.task(queue="orders")
def ship(order_id: int) -> None:
    # Idempotent by the order's own state: a relay that enqueued the same outbox row
    # twice (it crashed before deleting it) ships once.
    with psycopg.connect(APP_DSN, autocommit=True) as conn:
        conn.execute(f'UPDATE "{APP_SCHEMA}".orders SET shipped = shipped + 1 '
                     "WHERE id = %s AND shipped = 0", (order_id,))
