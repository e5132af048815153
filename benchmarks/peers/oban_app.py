"""Oban's side of the benchmark: ``python -m benchmarks.peers.oban_app QUEUE CONCURRENCY``.

Async workers (Oban for Python is asyncio throughout, so an I/O-free job costs a task, not a
thread), run until SIGTERM.
"""

from __future__ import annotations

import os
import time

from oban import Job, worker
from psycopg.conninfo import make_conninfo

from ..recorder import record, started

SCHEMA = os.environ.get("BENCH_SCHEMA", "public")
# search_path too, so Oban's install SQL (which checks current_schema()) and every query
# land in the peer's own schema, not in public.
DSN = make_conninfo(os.environ.get("SHIFTWORK_BENCH_PG",
                                   "postgresql://postgres@127.0.0.1:5432/test"),
                    options=f"-c search_path={SCHEMA}")


@worker(queue="bench")
class Noop:
    async def process(self, job: Job) -> None:
        started(job.id)


@worker(queue="urgent")
class Stamp:
    async def process(self, job: Job) -> None:
        record("l", job.id, (time.time() - float(job.args["sent"])) * 1000.0, now=True)


# The names jobs are stored under: Oban resolves workers by module path, and under
# ``python -m`` this module is ``__main__``, so the peer names the importable path.
NOOP = "benchmarks.peers.oban_app.Noop"
STAMP = "benchmarks.peers.oban_app.Stamp"


async def serve(queue: str, concurrency: int) -> None:
    import asyncio
    import signal

    from oban import Oban
    from psycopg_pool import AsyncConnectionPool

    # Oban's default pool (max 10): a producer holds one connection per fetch or ack.
    pool = AsyncConnectionPool(DSN, min_size=1, max_size=10, open=False)
    await pool.open()
    # Defaults otherwise: the Postgres notifier (insert triggers wake the queue at once),
    # stager every 1 s, producer debounce 5 ms; the queue's limit is the slot count.
    oban = Oban(pool=pool, prefix=SCHEMA, queues={queue: concurrency})
    stopping = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)
    await oban.start()
    await stopping.wait()
    await oban.stop()  # waits for running jobs and flushes their acks
    await pool.close()


def main(argv: list[str]) -> None:
    import asyncio

    # Register the workers under their importable names (see NOOP) before serving.
    import benchmarks.peers.oban_app as app

    asyncio.run(app.serve(argv[0], int(argv[1])))


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
