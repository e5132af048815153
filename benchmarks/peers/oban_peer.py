"""Oban for Python (open-source edition) as a benchmark peer."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from typing import Any

from .run import Peer as Base
from .run import count_rows


class Peer(Base):
    """Oban at its documented defaults, which are its throughput configuration: the queue's
    ``limit`` is the slot count, the Postgres notifier's insert trigger wakes producers at
    once, the stager polls every 1 s as a fallback, and a producer debounces fetches by
    5 ms so completions coalesce into one fetch. Pro's bulk insert and bulk ack are not
    available to the open-source edition, so both go row by row (in one transaction)."""

    tables = ("oban_jobs",)

    def config(self) -> dict[str, Any]:
        return {"edition": "open source (no Pro: per-row insert and ack)",
                "queues": "{queue: concurrency} (limit per process)",
                "notifier": "postgres (default; insert trigger)", "stager_interval_s": 1.0,
                "producer_debounce_s": 0.005, "pool_max_size": 10,
                "job": "async process() (asyncio task per job)", "max_attempts": 20}

    def setup(self) -> None:
        self.db.execute(f'CREATE SCHEMA "{self.schema}"')
        os.environ["BENCH_SCHEMA"] = self.schema
        from oban import Job, Oban
        from oban.schema import install
        from psycopg_pool import AsyncConnectionPool

        from .oban_app import DSN, NOOP, STAMP

        self.Job, self.noop, self.stamp = Job, NOOP, STAMP
        self.loop = asyncio.new_event_loop()
        self.pool = AsyncConnectionPool(DSN, min_size=1, max_size=2, open=False)
        self.loop.run_until_complete(self.pool.open())
        self.loop.run_until_complete(install(self.pool, prefix=self.schema))
        # Client mode (no queues): enqueues only, no leadership or loops.
        self.oban = Oban(pool=self.pool, prefix=self.schema)

    def reset(self) -> None:
        self.db.execute(f'TRUNCATE "{self.schema}".oban_jobs')

    def enqueue_bulk(self, n: int) -> None:
        for i in range(0, n, 5000):
            jobs = [self.Job(self.noop, queue="bench") for _ in range(min(5000, n - i))]
            self.loop.run_until_complete(self.oban.enqueue_many(jobs))

    def enqueue_one(self) -> None:
        self.loop.run_until_complete(self.oban.enqueue(self.Job(self.noop, queue="bench")))

    def enqueue_stamp(self) -> None:
        job = self.Job(self.stamp, queue="urgent", args={"sent": time.time()})
        self.loop.run_until_complete(self.oban.enqueue(job))

    def worker(self, concurrency: int, queue: str, label: str) -> subprocess.Popen[bytes]:
        return self.spawn([sys.executable, "-m", "benchmarks.peers.oban_app", queue,
                           str(concurrency)], label)

    def remaining(self) -> int:
        return count_rows(self.db, f'SELECT count(*) FROM "{self.schema}".oban_jobs WHERE state IN '
                          "('available', 'scheduled', 'executing', 'retryable')")

    def teardown(self) -> None:
        self.loop.run_until_complete(self.pool.close())
        self.loop.close()
        self.db.execute(f'DROP SCHEMA "{self.schema}" CASCADE')
