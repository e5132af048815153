"""A job's child process dies with its worker.

Killed with SIGKILL, a worker cannot kill its children; its jobs' leases run out and
they are rescued and run elsewhere, so a child left running would run its job a second
time at once. On Linux the kernel kills the child when the thread that started it ends
(``PR_SET_PDEATHSIG``; that thread waits for the child for its whole life); elsewhere a
thread watches for the parent to go.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1  # linux/prctl.h
WATCH_INTERVAL = 0.5  # seconds between looks at the parent, where prctl is missing


def die_with_parent(parent_pid: int) -> None:
    """Make this process end when ``parent_pid`` does (call first thing in the child)."""
    if not (sys.platform.startswith("linux") and _pdeathsig()):
        threading.Thread(target=_watch, args=(parent_pid,), name="shiftwork-parent-watch",
                         daemon=True).start()
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        os._exit(1)


def _pdeathsig() -> bool:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        return int(libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(WATCH_INTERVAL)
    os._exit(1)
