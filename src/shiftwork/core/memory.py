"""Memory ceilings: the one parser of a ``memory_limit`` value, and how sizes are shown.

A ceiling is given as bytes (an int) or a size with a unit: ``"512MB"``, ``"1.5GB"``,
``"200M"``. Units are binary (1 MB = 1024 x 1024 bytes), as in Docker and Kubernetes
(``Mi``): ``KB``/``K``/``KiB``, ``MB``/``M``/``MiB``, ``GB``/``G``/``GiB``; no unit means
bytes. A job whose task (or enqueue call, or queue) has a ceiling runs in a child process
(worker/process.py) whose data segment is limited and whose resident size is watched.
"""

from __future__ import annotations

import re
from typing import Any

from shiftwork.core.errors import ConfigurationError

MB = 1024 * 1024
#: The smallest ceiling accepted: a spawned child that has imported shiftwork and an app
#: is ~45 MB resident (measured on Linux, CPython 3.12), and a store connection with its
#: pool's threads adds more; a ceiling below this would fail every attempt at start.
MIN_MEMORY_LIMIT = 100 * MB
#: Where an enqueue call's own ceiling (``task.using(memory_limit=...)``) travels, in bytes.
MEMORY_META_KEY = "shiftwork.memory_limit"

_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": MB, "mb": MB, "mib": MB,
          "g": 1024 * MB, "gb": 1024 * MB, "gib": 1024 * MB}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*")


def parse_memory_limit(value: Any, what: str) -> int | None:
    """``value`` as a number of bytes (None: no ceiling), or a ConfigurationError naming
    ``what`` and the problem: not a size, not positive, or below :data:`MIN_MEMORY_LIMIT`."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ConfigurationError(f"{what}: memory_limit must be a size such as \"512MB\" "
                                 f"or a number of bytes, not {value!r}")
    if isinstance(value, int):
        size = value
    elif isinstance(value, str):
        match = _SIZE.fullmatch(value)
        unit = match.group(2).lower() if match else ""
        if match is None or unit not in _UNITS:
            raise ConfigurationError(
                f"{what}: memory_limit {value!r} is not a size; write a number and a unit, "
                "e.g. \"512MB\" or \"2GB\" (KB, MB, GB: powers of 1024)")
        size = int(float(match.group(1)) * _UNITS[unit])
    else:
        raise ConfigurationError(f"{what}: memory_limit must be a size such as \"512MB\" "
                                 f"or a number of bytes, not {type(value).__name__}")
    if size <= 0:
        raise ConfigurationError(f"{what}: memory_limit must be more than 0, got {value!r}")
    if size < MIN_MEMORY_LIMIT:
        raise ConfigurationError(
            f"{what}: memory_limit {value!r} is below {format_size(MIN_MEMORY_LIMIT)}, less "
            "than a Python child process needs to start (the job would fail every attempt)")
    return size


def format_size(size: int) -> str:
    """``536870912`` -> ``"512 MB"`` (whole MB; GB from 10 GB)."""
    if size >= 10 * 1024 * MB:
        return f"{size / (1024 * MB):.1f} GB"
    return f"{round(size / MB)} MB"


def exceeded_message(job_id: int, limit: int, peak: int | None, refused: bool) -> str:
    """The message of a :class:`~shiftwork.core.errors.MemoryLimitExceeded`: the ceiling, the
    peak resident size seen, and whether the kernel refused an allocation (the rlimit) or
    the watch stopped the process."""
    seen = f" (peak {format_size(peak)})" if peak else ""
    how = ("; an allocation past it was refused" if refused
           else "; its process was killed")
    return f"job {job_id} used more than {format_size(limit)}{seen}{how}"


def ceiling_of(meta: dict[str, Any], task_limit: int | None,
               queue_limit: int | None) -> int | None:
    """A job's ceiling in bytes: its enqueue call's (kept in its meta), else its task's,
    else its queue's (``-q reports=2:process:512MB``); None: no ceiling."""
    own = meta.get(MEMORY_META_KEY)
    if isinstance(own, int) and not isinstance(own, bool) and own > 0:
        return own
    return task_limit if task_limit is not None else queue_limit
