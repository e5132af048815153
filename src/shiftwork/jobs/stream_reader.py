"""``handle.read_stream(key, offset=0)``: a workflow's stream values as they arrive.

The reader pages through the stream from its offset and, when it has read all there is,
waits for a wake-up on the App's one result listener (jobs/waiting.py: a stream append
NOTIFYs its channel on PostgreSQL; on SQLite the listener sees the commit through
``PRAGMA data_version``), with the listener's fallback poll as a safety net. It ends at the
stream's closing row, or when the job has finished and every value is read (the page is
read after the job's state, so a finished job's page is complete).
"""

from __future__ import annotations

import asyncio
import threading

# Real time, not the runtime's clock: a caller's timeout bounds a real wait on an Event.
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

from shiftwork.core.bounds import seconds as check_seconds
from shiftwork.core.errors import ConfigurationError, JobNotFoundError
from shiftwork.core.states import JobState
from shiftwork.jobs.waiting import FALLBACK_POLL, ResultWaiter

PAGE = 500
FINISHED = frozenset({JobState.SUCCEEDED, JobState.DEAD, JobState.CANCELLED})


def read_stream(waiter: ResultWaiter, job_id: int, key: str, offset: int = 0,
                timeout: float | None = None) -> Iterator[Any]:
    """Yield the values of stream ``key`` from ``offset`` on; ``timeout``: the most seconds
    to wait for the next value (TimeoutError), None: as long as the workflow runs."""
    if not isinstance(key, str) or not key:
        raise ConfigurationError(f"read_stream: the key must be a non-empty string, not {key!r}")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ConfigurationError(f"read_stream: offset must be a whole number >= 0, "
                                 f"not {offset!r}")
    if timeout is not None:
        timeout = check_seconds(timeout, "read_stream: timeout")
    return _values(waiter, job_id, key, offset, timeout)


def _values(waiter: ResultWaiter, job_id: int, key: str, offset: int,
            timeout: float | None) -> Iterator[Any]:
    woken = threading.Event()
    withdraw = waiter.on_wake(woken.set)
    unwatch = waiter.watch(job_id, lambda _job: woken.set())  # its end wakes us too
    try:
        idle_since = time.monotonic()
        while True:
            woken.clear()  # before the read: a wake-up during it is not lost
            page = waiter.store().streams.read(job_id, key, offset, PAGE)
            if page.state is None:
                raise JobNotFoundError(f"no job with id {job_id} (never enqueued, or pruned)")
            for item in page.items:
                if item.closed:
                    return
                offset = item.seq + 1
                yield item.value
            if page.items:
                idle_since = time.monotonic()
                continue
            if page.state in FINISHED:
                return
            wait = FALLBACK_POLL
            if timeout is not None:
                left = timeout - (time.monotonic() - idle_since)
                if left <= 0:
                    raise TimeoutError(f"stream {key!r} of workflow {job_id}: no value within "
                                       f"{timeout} seconds")
                wait = min(wait, left)
            woken.wait(wait)
    finally:
        withdraw()
        unwatch()


async def read_stream_async(waiter: ResultWaiter, job_id: int, key: str, offset: int = 0,
                            timeout: float | None = None) -> AsyncIterator[Any]:
    """:func:`read_stream` for asyncio: each wait runs on a thread, never on the loop."""
    values = read_stream(waiter, job_id, key, offset, timeout)
    end = object()
    try:
        while (value := await asyncio.to_thread(next, values, end)) is not end:
            yield value
    finally:
        await asyncio.to_thread(values.close)  # type: ignore[attr-defined]
