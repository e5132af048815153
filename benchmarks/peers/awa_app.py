"""awa's side of the benchmark: ``python -m benchmarks.peers.awa_app DATABASE_URL QUEUE N``.

One awa ``AsyncClient`` whose Rust runtime claims and completes the jobs; the handlers
are the same two as every peer's, async (the Python SDK's natural form).
"""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from dataclasses import dataclass

import awa

from ..recorder import record, started


@dataclass
class Noop:
    """kind ``noop`` (awa derives the kind from the class name)."""


@dataclass
class Stamp:
    sent: float


async def noop(job: awa.Job[Noop]) -> None:
    started(job.id)


async def stamp(job: awa.Job[Stamp]) -> None:
    record("l", job.id, (time.time() - job.args.sent) * 1000.0, now=True)


async def _main(url: str, queue: str, concurrency: int) -> None:
    client = awa.AsyncClient(url)
    # Only this run's task: awa wants every declared queue started, and a slot on the
    # other queue would let this worker take jobs that are not its run's.
    if queue == "bench":
        client.task(Noop, queue="bench")(noop)
    else:
        client.task(Stamp, queue="urgent")(stamp)
    stopping = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)
    # The documented tuple form: hard-reserved mode, ``concurrency`` slots; every other
    # knob (claimers, claim batch, the 200 ms poll fallback behind NOTIFY) at its default.
    await client.start([(queue, concurrency)])
    await stopping.wait()
    await client.shutdown()
    await client.close()


if __name__ == "__main__":
    asyncio.run(_main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
