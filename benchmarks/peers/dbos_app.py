"""DBOS Transact's side: ``python -m benchmarks.peers.dbos_app QUEUE CONCURRENCY EXECUTOR``.

DBOS queues used as a job queue: each job is a one-function workflow, its workflow id the
job id, dequeued by this process's queue thread from the peer's system schema.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

from dbos import DBOS, DBOSConfig

from ..recorder import record, started

PG = os.environ.get("SHIFTWORK_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/test")
VERSION = "bench"  # fixed: DBOS only dequeues workflows enqueued for its own version
# The default 1 s caps a worker at worker_concurrency jobs a second; 50 ms is the short
# interval benchmarks/workflows already gives DBOS (the option is documented, any > 0).
POLL = float(os.environ.get("BENCH_DBOS_POLL", "0.05"))


@DBOS.workflow(name="noop")
def noop() -> None:
    started(DBOS.workflow_id)


@DBOS.workflow(name="stamp")
def stamp(sent: float) -> None:
    record("l", DBOS.workflow_id, (time.time() - sent) * 1000.0, now=True)


def config(executor: str) -> DBOSConfig:
    # executor_id unique per process: DBOS counts worker_concurrency per executor id.
    return {"name": "shiftwork-bench", "system_database_url": PG,
            "dbos_system_schema": os.environ["BENCH_SCHEMA"], "application_version": VERSION,
            "executor_id": executor, "log_level": "WARNING"}


def main(queue: str, concurrency: int, executor: str) -> None:
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    DBOS(config=config(executor))
    DBOS.listen_queues([queue])  # only this run's queue, as awa's and pgqueuer's workers
    DBOS.launch()
    DBOS.register_queue(queue, worker_concurrency=concurrency, polling_interval_sec=POLL,
                        on_conflict="always_update")
    stopping.wait()
    DBOS.destroy()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
