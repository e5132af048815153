"""SQLite queries for visibility: per-minute throughput, workers, search, discard."""

from __future__ import annotations

from datetime import datetime

from shiftwork.core.states import JobState
from shiftwork.model.records import (
    GroupStats,
    HistoryBucket,
    Job,
    QueueGroups,
    QueueMinute,
    TaskMinute,
    WaitingTask,
)
from shiftwork.store.history import Counts, Durations, percentiles
from shiftwork.store.rows import from_ts, job_from_row, loads, search_params
from shiftwork.store.sqlite.core import SQLiteCore


def _from_ts(value: float) -> datetime:
    result = from_ts(value)
    assert result is not None
    return result


class SQLiteObserve:
    """SQLite's statements of ``store.observe``, on the store's connections."""

    def __init__(self, core: SQLiteCore) -> None:
        self._core = core  # the SQLiteStore: connection, queries, clock
        self.q = core.q
        self._tx = core._tx
        self._now = core._now

    def queue_minutes_add(self, rows: list[QueueMinute]) -> None:
        if not rows:
            return
        with self._tx() as c:
            c.executemany(self.q["queue_minutes_add"], [{
                "queue": r.queue, "minute": r.minute.timestamp(), "succeeded": r.succeeded,
                "retried": r.retried, "dead": r.dead, "cancelled": r.cancelled} for r in rows])

    def queue_minutes_list(self, since: datetime) -> list[QueueMinute]:
        rows = self._core.conn.execute(self.q["queue_minutes_list"], {"since": since.timestamp()})
        return [QueueMinute(r[0], _from_ts(r[1]), r[2], r[3], r[4], r[5]) for r in rows]

    def queue_minutes_prune(self, keep_seconds: float) -> int:
        with self._tx() as c:
            return int(c.execute(self.q["queue_minutes_prune"],
                                 {"now": self._now(), "keep": keep_seconds}).rowcount)

    def task_minutes_add(self, rows: list[TaskMinute]) -> None:
        if not rows:
            return
        with self._tx() as c:
            c.executemany(self.q["task_minutes_add"], [{
                "task": r.task, "minute": r.minute.timestamp(), "succeeded": r.succeeded,
                "items": r.items, "retried": r.retried, "dead": r.dead,
                "cancelled": r.cancelled} for r in rows])

    def task_minutes_since(self, since: datetime) -> dict[str, tuple[int, int]]:
        rows = self._core.conn.execute(self.q["task_minutes_since"], {"since": since.timestamp()})
        return {r[0]: (int(r[1]), int(r[2])) for r in rows}

    def task_minutes_prune(self, keep_seconds: float) -> int:
        with self._tx() as c:
            return int(c.execute(self.q["task_minutes_prune"],
                                 {"now": self._now(), "keep": keep_seconds}).rowcount)

    def history_last(self) -> datetime | None:
        row = self._core.conn.execute(self.q["history_last"]).fetchone()
        return _from_ts(row[0]) if row and row[0] is not None else None

    def history_counts(self, since: datetime, until: datetime
                       ) -> tuple[dict[str, Counts], dict[str, Counts]]:
        params = {"since": since.timestamp(), "until": until.timestamp()}
        queues = self._core.conn.execute(self.q["history_queue_counts"], params).fetchall()
        tasks = self._core.conn.execute(self.q["history_task_counts"], params).fetchall()
        return ({r[0]: (int(r[1]), int(r[2]), int(r[3]), int(r[4])) for r in queues},
                {r[0]: (int(r[1]), int(r[2]), int(r[3]), int(r[4])) for r in tasks})

    def history_durations(self, since: datetime, until: datetime
                          ) -> dict[tuple[str, str], Durations]:
        return percentiles(self._core.conn.execute(self.q["history_durations"], {
            "since": since.timestamp(), "until": until.timestamp()}).fetchall())

    def history_waiting(self) -> list[tuple[str, str, datetime]]:
        rows = self._core.conn.execute(self.q["history_waiting"], {"now": self._now()}).fetchall()
        return [(r[0], r[1], _from_ts(r[2])) for r in rows]

    def history_add(self, rows: list[HistoryBucket]) -> None:
        if not rows:
            return
        with self._tx() as c:
            c.executemany(self.q["history_add"], [{
                "queue": r.queue, "task": r.task, "bucket": r.bucket.timestamp(),
                "succeeded": r.succeeded, "retried": r.retried, "dead": r.dead,
                "cancelled": r.cancelled, "runs": r.runs, "p50": r.p50, "p95": r.p95,
                "oldest_wait": r.oldest_wait} for r in rows])

    def history_list(self, since: datetime, queue: str | None = None,
                     task: str | None = None) -> list[HistoryBucket]:
        rows = self._core.conn.execute(self.q["history_list"], {
            "since": since.timestamp(), "queue": queue, "task": task}).fetchall()
        return [HistoryBucket(r[0], r[1], _from_ts(r[2]), *r[3:]) for r in rows]

    def history_prune(self, keep_seconds: float) -> int:
        with self._tx() as c:
            return int(c.execute(self.q["history_prune"],
                                 {"now": self._now(), "keep": keep_seconds}).rowcount)

    def workers_running(self) -> dict[str, int]:
        return {r[0]: r[1] for r in self._core.conn.execute(self.q["workers_running"])}

    def jobs_waiting_by_task(self) -> list[WaitingTask]:
        return [WaitingTask(r[0], r[1], int(r[2]), from_ts(r[3]))  # type: ignore[arg-type]
                for r in self._core.conn.execute(self.q["jobs_waiting_by_task"])]

    def groups_busiest(self, queue: str | None = None, limit: int = 10) -> list[GroupStats]:
        rows = self._core.conn.execute(self.q["groups_busiest"], {"queue": queue, "limit": limit})
        return [GroupStats(r[0], str(r[1]), int(r[2]), int(r[3])) for r in rows]

    def queue_group_counts(self) -> list[QueueGroups]:
        return [QueueGroups(r[0], int(r[1]), int(r[2]))
                for r in self._core.conn.execute(self.q["queue_group_counts"])]

    def jobs_search(self, text: str | None = None, state: JobState | None = None,
                    queue: str | None = None, limit: int = 50) -> list[Job]:
        rows = self._core.conn.execute(self.q["jobs_search"],
                                       search_params(text, state, queue, limit))
        return [job_from_row(dict(r), from_ts, loads) for r in rows]

    def jobs_discard(self, ids: list[int]) -> list[int]:
        done = []
        with self._tx() as c:
            for job_id in ids:
                if c.execute(self.q["jobs_discard"], {"id": job_id}).rowcount:
                    done.append(job_id)
        return sorted(done)
