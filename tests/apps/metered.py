"""A test app that gives every documented metric a series, for tests/test_prometheus.py:
a real worker and a real dashboard serve it to a real Prometheus.

Each task brings about one kind of event: successes with items, a failure that retries and
dies, a rate limit pushed back, a job cancelled while it runs, an attempt over its memory
ceiling. The test adds the rest (a lease left to expire, a job in a queue nobody serves).
"""

from __future__ import annotations

import os
import time
from typing import Any

from shiftwork import App, Backoff, Settings

app = App(os.environ["SHIFTWORK_TEST_DSN"], schema=os.environ.get("SHIFTWORK_TEST_SCHEMA",
                                                                   "shiftwork"),
          settings=Settings(heartbeat_interval=0.5, lease_seconds=1.5, rescue_interval=0.25,
                            poll_interval=0.2, leader_ttl=1.5))
app.queue("work", max_wait=60, rate_limit="1000/s")
app.queue("fair", fair=True)  # served by no worker in the test: unserved, with a group

MB = 1024 * 1024


@app.task(name="ok", queue="work", expect_items=1, expect_items_within=600)
def ok(ctx: Any, n: int) -> int:
    ctx.processed(n)
    return n


@app.task(name="flaky", queue="work", max_attempts=2,
          retry=Backoff(initial=0.01, maximum=0.02, jitter=False))
def flaky() -> None:
    raise RuntimeError("always")


@app.task(name="throttled", queue="work")
def throttled(ctx: Any) -> None:
    ctx.rate_limited(3600)  # held an hour: one event, and the job waits scheduled


@app.task(name="slow", queue="work")
def slow(ctx: Any) -> None:
    while True:  # until the test cancels it
        ctx.raise_if_cancelled()
        time.sleep(0.05)


@app.task(name="hog", queue="work", memory_limit="100MB", max_attempts=1)
def hog() -> int:
    chunks = [bytearray(b"x" * (10 * MB)) for _ in range(60)]
    return len(chunks)


@app.task(name="grouped", queue="fair")
def grouped() -> None: ...


app.schedule("nightly", "0 3 * * *", ok, args=(1,))
