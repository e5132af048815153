"""A test app for memory ceilings (issue 35), run in real worker processes by
tests/test_memory_limits.py: a task that allocates without bound, one that fills memory the
data-segment rlimit does not count (a shared mapping), and small neighbours."""

from __future__ import annotations

import mmap
import os
import time
from typing import Any

from shiftwork import App, Backoff, Settings

DSN = os.environ["SHIFTWORK_TEST_DSN"]
SCHEMA = os.environ.get("SHIFTWORK_TEST_SCHEMA", "shiftwork")

app = App(DSN, schema=SCHEMA, settings=Settings(
    heartbeat_interval=0.5, lease_seconds=1.5, rescue_interval=0.25, poll_interval=0.2,
    leader_ttl=3.0))

MB = 1024 * 1024
_QUICK = Backoff(initial=0.05, maximum=0.2)


@app.task(queue="mem", memory_limit="200MB", max_attempts=2, retry=_QUICK)
def hog(total_mb: int) -> int:
    """Allocate ``total_mb`` MB, 10 MB at a time, touching every page."""
    chunks = [bytearray(b"x" * (10 * MB)) for _ in range(total_mb // 10)]
    return len(chunks)


@app.task(queue="mem", memory_limit="200MB", max_attempts=1)
def shared_hog(total_mb: int, hold: float = 30.0) -> int:
    """Fill ``total_mb`` MB of a shared anonymous mapping, which RLIMIT_DATA does not count
    (only private writable memory is the data segment) but which is resident: only the
    parent's RSS watch can stop this one."""
    area = mmap.mmap(-1, total_mb * MB)
    for offset in range(0, total_mb * MB, mmap.PAGESIZE):
        area[offset] = 1
    time.sleep(hold)
    return total_mb


@app.task(queue="mem", memory_limit="200MB")
def modest(n: int) -> dict[str, Any]:
    """Stays well under its ceiling: succeeds, its peak recorded."""
    block = bytearray(b"y" * (20 * MB))
    return {"n": n, "pid": os.getpid(), "size": len(block)}


@app.task(queue="mem")
def neighbour(n: int, seconds: float = 0.0) -> dict[str, int]:
    """No ceiling: runs on the worker's thread pool, beside the limited jobs."""
    time.sleep(seconds)
    return {"n": n, "pid": os.getpid()}


@app.task(queue="plain")
def grows(total_mb: int) -> int:
    """No ceiling of its own: given one per call (``using``) or by its queue (``-q``)."""
    chunks = [bytearray(b"z" * (10 * MB)) for _ in range(total_mb // 10)]
    return len(chunks)
