"""Reading the history rollup (observe/rollup.py): one queue's or task's buckets laid out
as a day of series, one slot per five minutes (what the dashboard draws), and a window's
summary (what ``shiftwork queues`` prints)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from shiftwork.model.records import HistoryBucket
from shiftwork.observe.rollup import BUCKET


@dataclass(frozen=True)
class Series:
    """Per slot, oldest first; None: nothing to say for that slot (no row, no run)."""

    start: datetime  # the first slot's start (UTC)
    finished: list[int]
    failures: list[int]
    p50: list[float | None]
    p95: list[float | None]
    oldest_wait: list[float | None]

    @property
    def slots(self) -> int:
        return len(self.finished)


def series(rows: list[HistoryBucket], now: datetime, hours: float = 24.0) -> Series:
    """``rows`` of one queue or task as slots covering the ``hours`` before the open bucket."""
    slots = max(int(hours * 3600 // BUCKET), 1)
    open_start = now.timestamp() // BUCKET * BUCKET
    start = open_start - slots * BUCKET
    finished, failures = [0] * slots, [0] * slots
    p50: list[float | None] = [None] * slots
    p95: list[float | None] = [None] * slots
    wait: list[float | None] = [None] * slots
    for r in rows:
        i = int((r.bucket.timestamp() - start) // BUCKET)
        if 0 <= i < slots:
            finished[i] += r.finished
            failures[i] += r.failures
            p50[i], p95[i], wait[i] = r.p50, r.p95, r.oldest_wait
    return Series(datetime.fromtimestamp(start, UTC), finished, failures, p50, p95, wait)


@dataclass(frozen=True)
class Summary:
    """A queue's or task's window in a few figures."""

    finished: int
    failures: int
    worst_p95: float | None  # the slowest five minutes' p95 (percentiles do not add up)
    oldest_wait: float | None  # the latest sample

    def to_dict(self) -> dict[str, object]:
        return {"finished": self.finished, "failures": self.failures,
                "worst_p95_seconds": self.worst_p95, "oldest_wait_seconds": self.oldest_wait}


def summarize(rows: list[HistoryBucket]) -> Summary:
    p95s = [r.p95 for r in rows if r.p95 is not None]
    waits = sorted((r.bucket, r.oldest_wait) for r in rows if r.oldest_wait is not None)
    return Summary(sum(r.finished for r in rows), sum(r.failures for r in rows),
                   max(p95s, default=None), waits[-1][1] if waits else None)


def by_name(rows: list[HistoryBucket]) -> tuple[dict[str, list[HistoryBucket]],
                                                dict[str, list[HistoryBucket]]]:
    """Every queue's rows and every task's rows, from ``app.history()``."""
    queues: dict[str, list[HistoryBucket]] = {}
    tasks: dict[str, list[HistoryBucket]] = {}
    for r in rows:
        if r.task == "":
            queues.setdefault(r.queue, []).append(r)
        else:
            tasks.setdefault(r.task, []).append(r)
    return queues, tasks
