"""The urgent-job sender of the mixed workload, as a process of its own.

In the benchmark process it would share a GIL with the flood's bulk enqueue, and the
time each send waited for that GIL would be counted as pickup latency. A web app that
enqueues urgent jobs is not the process that bulk-loads the flood either.

    python -m benchmarks.sender INTERVAL STOP_FILE   (BENCH_DSN, BENCH_SCHEMA from env)

Sends one ``bench.stamp`` job every INTERVAL seconds until STOP_FILE exists, then
prints how many it sent. Each send's own duration is recorded too ("e" lines): the
part of the pickup latency spent before the job was even committed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from .app import app
from .ours import _sender


def bare_insert() -> Callable[[], Any] | None:
    """Postgres: a one-row durable INSERT on a connection of its own, no shiftwork code
    (SQLite: none, its one write lock would make it a different test)."""
    dsn = os.environ.get("BENCH_DSN", "")
    if not dsn.startswith("postgres"):
        return None
    import psycopg

    conn = psycopg.connect(dsn, autocommit=True)
    table = f'"{os.environ["BENCH_SCHEMA"]}".flood_floor'
    conn.execute(f"CREATE TABLE IF NOT EXISTS {table} (x int)")
    return lambda: conn.execute(f"INSERT INTO {table} VALUES (1)")


def main() -> None:
    interval, stop_file = float(sys.argv[1]), sys.argv[2]
    print(_sender(app, interval, lambda: os.path.exists(stop_file), floor=bare_insert()),
          flush=True)
    app.close()


if __name__ == "__main__":
    main()
