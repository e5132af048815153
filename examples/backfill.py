"""A chunked backfill over a large table that survives kill -9 and resumes.

    shiftwork migrate --app examples.backfill:app  # creates backfill-example.db
    python examples/backfill.py seed 200000      # a table of events to backfill
    shiftwork worker examples.backfill:app -q backfill=1
    python examples/backfill.py start --slow     # prints the job id
    shiftwork jobs follow ID --app examples.backfill:app
    # kill -9 the worker, start it again: the job resumes from its last checkpoint

On SQLite the 100 batches of 200,000 rows take about a second, over before anyone can
kill anything: ``--slow`` rests 0.2 s after each batch, so the run takes about 20 s and
the kill lands mid-way (``start`` without it runs at full speed).
    shiftwork queues pause backfill --app examples.backfill:app    # hurting the database?
    shiftwork queues resume backfill --app examples.backfill:app

Each batch's writes and its cursor commit in one transaction, so even a kill -9 between
two batches redoes nothing. SHIFTWORK_DSN picks the database (default: a SQLite file).
"""

from __future__ import annotations

import os
import sqlite3
import sys
import threading
import time
from typing import Any

from shiftwork import App, JobContext

DSN = os.environ.get("SHIFTWORK_DSN", "sqlite:///backfill-example.db")
app = App(DSN)
# From the DSN, not app.store: importing this module (as `shiftwork migrate` does) must
# not touch the database, which does not exist before the migration.
SQLITE = DSN.startswith("sqlite")
EVENTS = "events" if SQLITE else f'"{app.schema}".events'
_local = threading.local()
SLOW_REST = 0.2  # seconds after each batch with --slow


def q(text: str) -> str:
    """Queries here use ``?``; psycopg wants ``%s``."""
    return text if SQLITE else text.replace("?", "%s")


def reader() -> Any:
    """A read connection of this thread's own, for fetching batches."""
    conn = getattr(_local, "conn", None)
    if conn is None:
        if SQLITE:
            conn = sqlite3.connect(DSN.split(":///", 1)[1], isolation_level=None)
        else:
            import psycopg

            conn = psycopg.connect(DSN, autocommit=True)
        _local.conn = conn
    return conn


@app.task(name="examples.backfill_sizes", queue="backfill", max_attempts=100)
def backfill_sizes(ctx: JobContext, batch_size: int = 2000, rest: float = 0.0) -> int:
    """Fill ``events.size`` from ``payload``, in batches of keyset order; ``rest``: seconds
    to wait after each batch (``start --slow``: time to kill the worker mid-way)."""
    total = reader().execute(f"SELECT count(*) FROM {EVENTS}").fetchone()[0]

    def fetch(after: int | None, n: int) -> list[Any]:
        return reader().execute(q(f"SELECT id, payload FROM {EVENTS} WHERE id > ? "
                                  "ORDER BY id LIMIT ?"), (after or 0, n)).fetchall()

    for batch in ctx.batches(fetch, key=lambda row: row[0], size=batch_size, total=total,
                             message="sizing events"):
        with ctx.transaction() as tx:  # the batch's writes and its cursor, together
            for row_id, payload in batch:
                tx.execute(q(f"UPDATE {EVENTS} SET size = ? WHERE id = ?"),
                           (len(payload), row_id))
            tx.checkpoint(batch.cursor)
        time.sleep(rest)
    return int(ctx.last_checkpoint["done"]) if ctx.last_checkpoint else 0


def seed(rows: int) -> None:
    with app.store.transaction() as conn:
        conn.execute(f"CREATE TABLE IF NOT EXISTS {EVENTS} "
                     "(id bigint PRIMARY KEY, payload text NOT NULL, size integer)")
        conn.execute(f"DELETE FROM {EVENTS}")
        if SQLITE:
            conn.executemany(f"INSERT INTO {EVENTS} (id, payload) VALUES (?, ?)",
                             ((i, "x" * (i % 50)) for i in range(1, rows + 1)))
        else:
            conn.execute(f"INSERT INTO {EVENTS} (id, payload) SELECT g, repeat('x', mod(g, 50)) "
                         "FROM generate_series(1, %s) g", (rows,))
    print(f"seeded {rows} events")


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else "start"
    if command == "seed":
        seed(int(sys.argv[2]) if len(sys.argv) > 2 else 200_000)
    else:
        rest = SLOW_REST if "--slow" in sys.argv[2:] else 0.0
        print(f"job {backfill_sizes.enqueue(rest=rest).id} enqueued on queue backfill")
