"""Resident memory of a job's child process, as its parent samples it, and of oneself.

Linux: ``/proc/<pid>/status`` (``VmRSS`` now, ``VmHWM`` the kernel's own peak), about
20 us a read. Elsewhere psutil, when it is installed (``pip install psutil``); without
it a parent cannot sample a child there, and the ceiling rests on the child's rlimit
(where the platform enforces one) and on the peak the child reports at its end.
"""

from __future__ import annotations

import os
import sys
from typing import Any

try:  # optional: only needed off Linux
    import psutil as _psutil
except ImportError:  # pragma: no cover - not installed in the test environment
    _psutil = None

try:
    import resource as _resource
except ImportError:  # Windows
    _resource = None  # type: ignore[assignment]

LINUX = sys.platform.startswith("linux")


def can_sample() -> bool:
    """Whether a parent can read a child's resident size on this platform."""
    return LINUX or _psutil is not None


def sample(pid: int) -> tuple[int, int] | None:
    """(resident bytes now, peak resident bytes so far) of process ``pid``, or None when
    it cannot be read (gone, or no way on this platform)."""
    if LINUX:
        try:
            with open(f"/proc/{pid}/status", "rb") as f:
                text = f.read()
        except OSError:
            return None
        now = peak = None
        for line in text.splitlines():
            if line.startswith(b"VmRSS:"):
                now = int(line.split()[1]) * 1024
            elif line.startswith(b"VmHWM:"):
                peak = int(line.split()[1]) * 1024
        if now is None:  # a zombie: its memory is gone already
            return None
        return now, max(peak or 0, now)
    if _psutil is not None:
        try:
            info: Any = _psutil.Process(pid).memory_info()
        except Exception:  # gone, or access denied
            return None
        rss = int(info.rss)
        return rss, max(rss, int(getattr(info, "peak_wset", 0) or 0))
    return None


def own_peak() -> int | None:
    """This process's peak resident size in bytes (what a child reports at its end).

    On Linux VmHWM, not ``ru_maxrss``: a spawned child's ``ru_maxrss`` keeps the high-water
    mark of the forked copy it replaced at exec, the size of its parent (a child of a 2 GB
    worker would report 2 GB)."""
    if LINUX:
        seen = sample(os.getpid())
        return seen[1] if seen is not None else None
    if _resource is not None:
        peak = _resource.getrusage(_resource.RUSAGE_SELF).ru_maxrss
        return int(peak) if sys.platform == "darwin" else int(peak) * 1024  # Linux: KB
    if _psutil is not None:
        info: Any = _psutil.Process().memory_info()
        return int(getattr(info, "peak_wset", 0) or info.rss)
    return None


def limit_data_segment(limit: int) -> bool:
    """Cap this process's data segment (heap and private memory: ``RLIMIT_DATA``) at
    ``limit`` bytes, so an allocation past it fails with MemoryError. False where the
    platform has no such limit (Windows), or does not enforce it (macOS ignores it for
    ``mmap``): there the parent's watch alone stops the process."""
    if _resource is None or not hasattr(_resource, "RLIMIT_DATA"):
        return False
    _soft, hard = _resource.getrlimit(_resource.RLIMIT_DATA)
    cap = limit if hard == _resource.RLIM_INFINITY else min(limit, hard)
    try:
        _resource.setrlimit(_resource.RLIMIT_DATA, (cap, hard))
    except (ValueError, OSError):
        return False
    return LINUX
