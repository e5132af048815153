"""chancy as a benchmark peer."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from typing import Any

from .run import Peer as Base
from .run import count_rows

NOOP = "benchmarks.peers.chancy_app.noop"
STAMP = "benchmarks.peers.chancy_app.stamp"


class Peer(Base):
    """chancy with the executor its docs give for many I/O-bound jobs (``AsyncExecutor``:
    jobs run as tasks on the worker's loop, none of the default ProcessExecutor's process
    pool), ``eager_polling`` (its docs: poll again as soon as a job completes, for queues
    where jobs are continuously available, instead of sleeping out the interval) and the
    shortest ``polling_interval`` the schema allows (an integer, so 1 s); new pushes wake
    the queue through its NOTIFY. Job updates are written in batches every
    ``send_outgoing_interval`` (1 s, its default)."""

    tables = ("chancy_jobs",)
    polling_interval = 1

    def config(self) -> dict[str, Any]:
        return {"executor": "chancy.executors.asyncex.AsyncExecutor", "eager_polling": True,
                "polling_interval_s": self.polling_interval, "notifications": True,
                "send_outgoing_interval_s": 1, "plugins": "defaults",
                "concurrency": "per queue per worker process", "max_attempts": 1}

    def setup(self) -> None:
        self.db.execute(f'CREATE SCHEMA "{self.schema}"')
        os.environ["BENCH_SCHEMA"] = self.schema
        from chancy import Chancy, Job, Queue

        from . import chancy_app

        self.app, self.Job, self.Queue = chancy_app, Job, Queue

        async def migrate() -> None:
            async with Chancy(chancy_app.DSN) as c:
                await c.migrate()  # its own migrations, plugins' included

        asyncio.run(migrate())
        self.chancy = Chancy(chancy_app.DSN, min_connection_pool_size=1,
                             max_connection_pool_size=2)
        self.chancy.__enter__()  # the sync pool: the harness is synchronous

    def reset(self) -> None:
        self.db.execute(f'TRUNCATE "{self.schema}".chancy_jobs CASCADE')

    def enqueue_bulk(self, n: int) -> None:
        for i in range(0, n, 5000):
            jobs = [self.Job(func=NOOP, queue="bench")] * min(5000, n - i)
            # A generator, one transaction per batch: consuming it does the inserts.
            for _ in self.chancy.sync_push_many(jobs, batch_size=5000):
                pass

    def enqueue_one(self) -> None:
        self.chancy.sync_push(self.Job(func=NOOP, queue="bench"))

    def enqueue_stamp(self) -> None:
        self.chancy.sync_push(self.Job(func=STAMP, queue="urgent",
                                       kwargs={"sent": time.time()}))

    def worker(self, concurrency: int, queue: str, label: str) -> subprocess.Popen[bytes]:
        # chancy keeps queue settings in its table; the slots are per worker process.
        self.chancy.sync_declare(self.Queue(
            queue, concurrency=concurrency, tags={self.app.tag(queue)},
            executor="chancy.executors.asyncex.AsyncExecutor",
            polling_interval=self.polling_interval, eager_polling=True), upsert=True)
        return self.spawn([sys.executable, "-m", "benchmarks.peers.chancy_app", queue], label)

    def remaining(self) -> int:
        return count_rows(self.db, f'SELECT count(*) FROM "{self.schema}".chancy_jobs '
                          "WHERE state IN ('pending', 'running', 'retrying')")

    def teardown(self) -> None:
        self.chancy.__exit__(None, None, None)
        self.db.execute(f'DROP SCHEMA "{self.schema}" CASCADE')
