"""DBOS Transact as a peer: its queues used as a job queue.

DBOS keeps its system tables in a schema of its choosing (``dbos_system_schema``), so it
lives in ``self.schema`` of the shared database, created by its own ``DBOS.migrate``.
Producers enqueue through ``DBOSClient`` (the documented way for a process that is not a
DBOS executor); workers are DBOS processes each with its own ``executor_id``, listening
on one queue with ``worker_concurrency`` = the run's concurrency and a 50 ms poll.
"""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

import sqlalchemy as sa
from dbos import DBOS, DBOSClient, EnqueueOptions

from .dbos_app import POLL, VERSION
from .run import PG, count_rows
from .run import Peer as Base


def _opts(name: str, queue: str) -> EnqueueOptions:
    return EnqueueOptions(workflow_name=name, queue_name=queue, app_version=VERSION)


class Peer(Base):
    tables = ("workflow_status",)

    def config(self) -> dict[str, Any]:
        return {"queue": "register_queue(worker_concurrency=concurrency)",
                "polling_interval_sec": POLL, "executor_id": "one per worker process",
                "system_database": "shared database, own dbos_system_schema",
                "sys_db_pool_size": "20 (default)", "max_executor_threads": "default (no cap)",
                "bulk": "none: enqueue_in_transaction, 5000 per transaction"}

    def setup(self) -> None:
        self.db.execute(f'CREATE SCHEMA "{self.schema}"')
        DBOS.migrate(PG, schema=self.schema)
        self.client = DBOSClient(system_database_url=PG, dbos_system_schema=self.schema)
        self.engine = sa.create_engine(PG.replace("postgresql://", "postgresql+psycopg://"))

    def reset(self) -> None:
        # workflow_status is the queue (one row per workflow); CASCADE empties its children
        self.db.execute(f'TRUNCATE "{self.schema}".workflow_status CASCADE')

    def enqueue_bulk(self, n: int) -> None:
        # DBOS has no bulk enqueue; its transactional enqueue at least shares one commit
        # among a chunk's inserts (still one INSERT per workflow).
        opts = _opts("noop", "bench")
        for i in range(0, n, 5000):
            with self.engine.begin() as conn:
                for _ in range(min(5000, n - i)):
                    self.client.enqueue_in_transaction(conn, opts)

    def enqueue_one(self) -> None:
        self.client.enqueue(_opts("noop", "bench"))

    def enqueue_stamp(self) -> None:
        self.client.enqueue(_opts("stamp", "urgent"), time.time())

    def worker(self, concurrency: int, queue: str, label: str) -> subprocess.Popen[bytes]:
        return self.spawn([sys.executable, "-m", "benchmarks.peers.dbos_app", queue,
                           str(concurrency), f"{self.schema}-{label}"], label)

    def remaining(self) -> int:
        return count_rows(self.db, f'SELECT count(*) FROM "{self.schema}".workflow_status '
                          "WHERE status IN ('ENQUEUED', 'PENDING')")

    def teardown(self) -> None:
        self.client.destroy()
        self.engine.dispose()
        self.db.execute(f'DROP SCHEMA "{self.schema}" CASCADE')
