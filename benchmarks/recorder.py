"""What a benchmark job writes down: one line per event, in a file per process.

Standard library only: the peers' apps import it too, from their own virtualenv.
Lines are buffered and flushed every ``BATCH`` lines and at exit, so recording
costs a list append, not a write per job.
"""

from __future__ import annotations

import atexit
import os
import threading
import time

DIR = os.environ.get("BENCH_RECORD_DIR", "")
BATCH = 1000

_lock = threading.Lock()
_buf: list[str] = []


def _path() -> str:
    return os.path.join(DIR, f"{os.getpid()}.rec")


def _flush_locked() -> None:
    if _buf and DIR:
        with open(_path(), "a") as f:
            f.write("\n".join(_buf) + "\n")
    _buf.clear()


_flusher: threading.Thread | None = None


def _flush_often() -> None:
    while True:  # so a reader sees the last few lines before the process exits
        time.sleep(0.2)
        flush()


def record(kind: str, *values: object, now: bool = False) -> None:
    """Note an event; ``now`` writes it through at once (latency runs)."""
    global _flusher
    line = kind + " " + " ".join(str(v) for v in values)
    with _lock:
        _buf.append(line)
        if now or len(_buf) >= BATCH:
            _flush_locked()
        if _flusher is None:
            _flusher = threading.Thread(target=_flush_often, daemon=True)
            _flusher.start()


def started(job_id: object, attempt: int = 1) -> None:
    """A drain job's first statement, the same for shiftwork and every peer: its id and the
    wall-clock moment it started. The drain's span is first start to last start."""
    record("d", job_id, attempt, time.time())


def flush() -> None:
    with _lock:
        _flush_locked()


atexit.register(flush)


def read_all(directory: str) -> list[list[str]]:
    """Every recorded line, split into fields, from every process."""
    out: list[list[str]] = []
    for name in sorted(os.listdir(directory)):
        if name.endswith(".rec"):
            with open(os.path.join(directory, name)) as f:
                out += [line.split() for line in f if line.strip()]
    return out


def starts(directory: str) -> tuple[dict[str, int], float]:
    """From the ``started`` lines: how often each job id started, and the span in seconds
    from the first start to the last."""
    seen: dict[str, int] = {}
    first, last = float("inf"), float("-inf")
    for row in read_all(directory):
        if row[0] == "d" and len(row) >= 4:
            seen[row[1]] = seen.get(row[1], 0) + 1
            t = float(row[3])
            first, last = min(first, t), max(last, t)
    return seen, (last - first) if seen else 0.0
