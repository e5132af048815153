"""chancy's side of the benchmark: ``python -m benchmarks.peers.chancy_app QUEUE``.

No ``from __future__ import annotations`` here: chancy injects the running job into a
keyword-only parameter by ``issubclass`` on its annotation, which a string would defeat.
The queue (its executor, slots and polling) is declared by the peer before this starts.
"""

import os
import time

from chancy import Chancy, QueuedJob
from psycopg.conninfo import make_conninfo

from ..recorder import record, started

SCHEMA = os.environ.get("BENCH_SCHEMA", "public")
# chancy namespaces by table prefix only; search_path puts its tables in the peer's schema.
DSN = make_conninfo(os.environ.get("SHIFTWORK_BENCH_PG",
                                   "postgresql://postgres@127.0.0.1:5432/test"),
                    options=f"-c search_path={SCHEMA}")


async def noop(*, job: QueuedJob) -> None:
    started(job.id)


async def stamp(sent: float, *, job: QueuedJob) -> None:
    record("l", job.id, (time.time() - sent) * 1000.0, now=True)


def tag(queue: str) -> str:
    """A worker tag, so the drain's worker runs only "bench" and the latency one "urgent"."""
    return f"bench-queue={queue}"


async def serve(queue: str) -> None:
    from chancy import Worker

    # Default plugins (leadership, pruner, recovery, metrics, workflow) as chancy ships.
    async with Chancy(DSN) as chancy, Worker(chancy, tags={tag(queue)}) as worker:
        # The worker's own SIGTERM handler stops it and flushes its batched job updates.
        await worker.wait_for_shutdown()


if __name__ == "__main__":
    import asyncio
    import sys

    asyncio.run(serve(sys.argv[1]))
