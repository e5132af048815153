"""awa-pg (a Rust-core Postgres queue with Python bindings) as a peer.

awa's migrations hard-code the ``awa`` schema, so it gets a database of its own named
after ``self.schema``. Storage is its queue-storage engine (append-only ready entries
and a partitioned receipt ring: the engine its README recommends for sustained load),
installed with ``install_queue_storage`` (the documented call for queue-storage-only
set-ups), producers use its COPY bulk call ``enqueue_many_copy``, and workers run the
documented tuple form ``start([(queue, concurrency)])`` with every tuning knob at its
default.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any
from urllib.parse import urlsplit

import awa
import psycopg

from .awa_app import Noop, Stamp
from .run import PG, count_rows
from .run import Peer as Base


class Peer(Base):
    def config(self) -> dict[str, Any]:
        return {"storage": "queue_storage (install_queue_storage)", "bulk": "enqueue_many_copy",
                "start": "[(queue, concurrency)] hard-reserved", "max_connections": 10,
                "poll_interval_ms": "200 (default, fallback behind LISTEN/NOTIFY)",
                "claimers/claim_batch_size": "default"}

    @property
    def url(self) -> str:
        return urlsplit(PG)._replace(path=f"/{self.schema}").geturl()

    def _create(self) -> None:
        self.db.execute(f'CREATE DATABASE "{self.schema}"')
        self.client = awa.Client(self.url)
        self.client.migrate()
        self.client.install_queue_storage()
        self.conn = psycopg.connect(self.url, autocommit=True)

    def _drop(self) -> None:
        self.conn.close()
        self.client.close()
        self.db.execute(f'DROP DATABASE IF EXISTS "{self.schema}" WITH (FORCE)')

    def setup(self) -> None:
        self._create()

    def reset(self) -> None:
        # A fresh database: queue storage is rings of partitions with lane cursors and
        # counters, which truncating tables behind its back would leave out of step.
        self._drop()
        self._create()

    def enqueue_bulk(self, n: int) -> None:
        for i in range(0, n, 5000):
            self.client.enqueue_many_copy([Noop()] * min(5000, n - i), queue="bench")

    def enqueue_one(self) -> None:
        self.client.insert(Noop(), queue="bench")

    def enqueue_stamp(self) -> None:
        self.client.insert(Stamp(sent=time.time()), queue="urgent")

    def worker(self, concurrency: int, queue: str, label: str) -> subprocess.Popen[bytes]:
        return self.spawn([sys.executable, "-m", "benchmarks.peers.awa_app", self.url, queue,
                           str(concurrency)], label)

    def remaining(self) -> int:
        # Enqueued less finished, from the queue-storage tables themselves: every job is one
        # ready entry (noop never retries), a success lands in a receipt completion batch,
        # any other end in done_entries. Its exact compatibility view (awa.jobs) takes
        # 0.3 s per count at 20,000 jobs and seconds mid-drain, a core the drain loses.
        # All three are partitioned by ready_slot, so a pruned slot drops from each alike.
        return count_rows(self.conn,
            "SELECT (SELECT count(*) FROM awa.ready_entries)"
            " - (SELECT coalesce(sum(completed_count), 0) FROM awa.receipt_completion_batches)"
            " - (SELECT count(*) FROM awa.done_entries)")

    def analyze(self) -> None:
        if os.environ.get("BENCH_ANALYZE", "1") == "0":
            return
        self.conn.execute("ANALYZE")  # every table of its own database: they are all awa's

    def teardown(self) -> None:
        self._drop()
