"""PgQueuer's side of the benchmark (``pgq run benchmarks.peers.pgqueuer_app:create``)."""

from __future__ import annotations

import os
import time

import asyncpg
from pgqueuer import AsyncpgDriver, Job, PgQueuer

from ..recorder import record, started


async def create() -> PgQueuer:
    conn = await asyncpg.connect(os.environ["SHIFTWORK_BENCH_PG"], server_settings={
        "search_path": os.environ["BENCH_SCHEMA"]})
    pgq = PgQueuer(AsyncpgDriver(conn))

    @pgq.entrypoint("noop")
    async def noop(job: Job) -> None:
        started(job.id)

    @pgq.entrypoint("stamp")
    async def stamp(job: Job) -> None:
        sent = float((job.payload or b"0").decode())
        record("l", job.id, (time.time() - sent) * 1000.0, now=True)

    return pgq


async def _main(batch_size: int, concurrency: int) -> None:
    """``concurrency`` 0 leaves ``max_concurrent_tasks`` at PgQueuer's default (no cap)."""
    import asyncio
    import signal

    pgq = await create()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, pgq.shutdown.set)
    await pgq.run(batch_size=batch_size, max_concurrent_tasks=concurrency or None)


if __name__ == "__main__":
    # Started directly: `pgq run` 1.6.0 fails on its own --log-level default here.
    import asyncio
    import sys

    asyncio.run(_main(int(sys.argv[1]), int(sys.argv[2])))
