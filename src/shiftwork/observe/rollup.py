"""The history rollup: five-minute buckets per queue and per task, written by the leader.

Each closed bucket is written once, in one transaction, a few seconds after it closed:

- finished counts by outcome, summed from the workers' per-minute counts
  (``queue_minutes``, ``task_minutes``), so retried attempts count and pruned jobs do not
  go missing;
- the nearest-rank p50 and p95 run time of the jobs that finished in it (succeeded or
  dead; their last attempt), ranked in the database over a range of the finished-jobs
  index: two rows per queue or task come back, so memory does not grow with throughput;
- the age of the oldest due job, sampled when the bucket is written right after it
  closed (a bucket written late, after an outage, leaves it None rather than lie).

A leader change mid-bucket is harmless: only closed buckets are written, and the insert
keeps rows already there, so two leaders overlapping write a bucket once.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from shiftwork.core.clock import Clock
from shiftwork.core.settings import Settings
from shiftwork.model.records import HistoryBucket
from shiftwork.store.base import Store

log = logging.getLogger("shiftwork.observe")

BUCKET = 300  # seconds
#: A bucket is written this long after it closed: the recorders flush every 5 seconds.
GRACE = 10.0
#: Most buckets one leader tick writes when catching up (three reads each).
CATCH_UP = 12


class HistoryRollup:
    """Writes the buckets that closed since the last one written (call :meth:`tick` on
    every leader tick, with the leader's term)."""

    def __init__(self, store: Store, clock: Clock, settings: Settings) -> None:
        self.store = store
        self.clock = clock
        self.settings = settings
        self._next: float | None = None  # start of the next bucket to write (epoch seconds)
        self._term: int | None = None

    def tick(self, term: int | None = None) -> int:
        """Write the closed buckets not written yet; returns how many were written."""
        if term != self._term:  # another leader may have written since: ask the table
            self._term, self._next = term, None
        now = self.clock.now().timestamp()
        ready = (now - GRACE) // BUCKET * BUCKET  # the end of the newest closed bucket
        if self._next is None:
            last = self.store.observe.history_last()
            oldest = (now - self.settings.history_retention) // BUCKET * BUCKET + BUCKET
            self._next = max(last.timestamp() + BUCKET if last else ready - BUCKET, oldest)
        written = 0
        while self._next + BUCKET <= ready and written < CATCH_UP:
            self.write(self._next, sample_waiting=self._next + BUCKET == ready)
            self._next += BUCKET
            written += 1
        return written

    def write(self, start: float, sample_waiting: bool) -> None:
        """Write the bucket beginning at ``start`` (epoch seconds, a multiple of BUCKET)."""
        since = datetime.fromtimestamp(start, UTC)
        until = datetime.fromtimestamp(start + BUCKET, UTC)
        queues, tasks = self.store.observe.history_counts(since, until)
        durations = self.store.observe.history_durations(since, until)
        waits: dict[tuple[str, str], float] = {}
        if sample_waiting:
            now = self.clock.now()
            for queue, task, run_at in self.store.observe.history_waiting():
                age = max((now - run_at).total_seconds(), 0.0)
                for key in ((queue, ""), ("", task)):
                    waits[key] = max(waits.get(key, 0.0), age)
        counts = {(q, ""): c for q, c in queues.items()}
        counts.update({("", t): c for t, c in tasks.items()})
        rows = []
        for key in sorted(set(counts) | set(durations) | set(waits)):
            succeeded, retried, dead, cancelled = counts.get(key, (0, 0, 0, 0))
            d = durations.get(key)
            rows.append(HistoryBucket(
                key[0], key[1], since, succeeded, retried, dead, cancelled,
                d.runs if d else 0, d.p50 if d else None, d.p95 if d else None,
                waits.get(key)))
        self.store.observe.history_add(rows)
        log.debug("history bucket %s: %d rows", since.isoformat(), len(rows))
