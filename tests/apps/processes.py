"""A test app for `shiftwork worker --processes N` (tests/test_worker_processes.py).

Each job records which process ran it (its result is the pid). Env: SHIFTWORK_TEST_CHILD_CRASH=1
makes the import fail in a worker process but not in the supervisor (a child that crashes
at start); SHIFTWORK_TEST_POOL_MAX_IDLE (seconds).
"""

from __future__ import annotations

import multiprocessing
import os
import time

from shiftwork import App, Settings

if os.environ.get("SHIFTWORK_TEST_CHILD_CRASH") == "1" and multiprocessing.parent_process():
    raise RuntimeError("this release cannot start (SHIFTWORK_TEST_CHILD_CRASH)")

app = App(os.environ["SHIFTWORK_TEST_DSN"],
          schema=os.environ.get("SHIFTWORK_TEST_SCHEMA", "shiftwork"),
          settings=Settings(heartbeat_interval=1.0, lease_seconds=5.0, rescue_interval=0.25,
                            poll_interval=float(os.environ.get("SHIFTWORK_TEST_POLL", "0.2")),
                            leader_ttl=2.0,
                            pool_max_idle=float(os.environ.get("SHIFTWORK_TEST_POOL_MAX_IDLE",
                                                               "30"))))

# A lease of 5 s (the suite's usual 1.5 s is lost to one late heartbeat on a loaded
# machine, and a lost lease is what these tests say does not happen).
_held: list[bytearray] = []  # what hold_memory keeps alive in its process


@app.task(queue="work")
def pid_of(seconds: float = 0.0) -> int:
    """Sleeps ``seconds``; returns the pid of the process that ran it."""
    time.sleep(seconds)
    return os.getpid()


@app.task(queue="work")
def hold_memory(megabytes: int) -> int:
    """Keeps ``megabytes`` (touched, so resident) alive in this process after it returns."""
    block = bytearray(megabytes * 2**20)
    for i in range(0, len(block), 4096):
        block[i] = 1
    _held.append(block)
    return os.getpid()
