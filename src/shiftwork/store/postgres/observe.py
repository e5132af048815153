"""PostgreSQL queries for visibility: per-minute throughput, workers, search, discard."""

from __future__ import annotations

from datetime import datetime

from psycopg.rows import dict_row

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
from shiftwork.store.postgres.core import PostgresCore
from shiftwork.store.rows import aware, decoded, job_from_row, search_params


class PostgresObserve:
    """PostgreSQL's statements of ``store.observe``, on the store's connections."""

    def __init__(self, core: PostgresCore) -> None:
        self._core = core  # the PostgresStore: connections, queries
        self.q = core.q
        self._conn = core._conn
        self._p = core._p

    def queue_minutes_add(self, rows: list[QueueMinute]) -> None:
        if not rows:
            return
        with self._conn() as c:
            c.execute(self.q["queue_minutes_add"], {
                "queues": [r.queue for r in rows], "minutes": [r.minute for r in rows],
                "succeeded": [r.succeeded for r in rows], "retried": [r.retried for r in rows],
                "dead": [r.dead for r in rows], "cancelled": [r.cancelled for r in rows]})

    def queue_minutes_list(self, since: datetime) -> list[QueueMinute]:
        with self._conn() as c:
            rows = c.execute(self.q["queue_minutes_list"], {"since": since}).fetchall()
        return [QueueMinute(r[0], aware(r[1]), r[2], r[3], r[4], r[5])  # type: ignore[arg-type]
                for r in rows]

    def queue_minutes_prune(self, keep_seconds: float) -> int:
        with self._conn() as c:
            cur = c.execute(self.q["queue_minutes_prune"], self._p(keep=keep_seconds))
            return int(cur.rowcount)

    def task_minutes_add(self, rows: list[TaskMinute]) -> None:
        if not rows:
            return
        with self._conn() as c:
            c.execute(self.q["task_minutes_add"], {
                "tasks": [r.task for r in rows], "minutes": [r.minute for r in rows],
                "succeeded": [r.succeeded for r in rows], "items": [r.items for r in rows],
                "retried": [r.retried for r in rows], "dead": [r.dead for r in rows],
                "cancelled": [r.cancelled for r in rows]})

    def task_minutes_since(self, since: datetime) -> dict[str, tuple[int, int]]:
        with self._conn() as c:
            rows = c.execute(self.q["task_minutes_since"], {"since": since}).fetchall()
        return {r[0]: (int(r[1]), int(r[2])) for r in rows}

    def task_minutes_prune(self, keep_seconds: float) -> int:
        with self._conn() as c:
            cur = c.execute(self.q["task_minutes_prune"], self._p(keep=keep_seconds))
            return int(cur.rowcount)

    def history_last(self) -> datetime | None:
        with self._conn() as c:
            row = c.execute(self.q["history_last"]).fetchone()
        return aware(row[0]) if row and row[0] is not None else None

    def history_counts(self, since: datetime, until: datetime
                       ) -> tuple[dict[str, Counts], dict[str, Counts]]:
        params = {"since": since, "until": until}
        with self._conn() as c:
            queues = c.execute(self.q["history_queue_counts"], params).fetchall()
            tasks = c.execute(self.q["history_task_counts"], params).fetchall()
        return ({r[0]: (int(r[1]), int(r[2]), int(r[3]), int(r[4])) for r in queues},
                {r[0]: (int(r[1]), int(r[2]), int(r[3]), int(r[4])) for r in tasks})

    def history_durations(self, since: datetime, until: datetime
                          ) -> dict[tuple[str, str], Durations]:
        with self._conn() as c:
            return percentiles(c.execute(self.q["history_durations"],
                                         {"since": since, "until": until}).fetchall())

    def history_waiting(self) -> list[tuple[str, str, datetime]]:
        with self._conn() as c:
            rows = c.execute(self.q["history_waiting"], self._p()).fetchall()
        return [(r[0], r[1], aware(r[2])) for r in rows]  # type: ignore[misc]

    def history_add(self, rows: list[HistoryBucket]) -> None:
        if not rows:
            return
        with self._conn() as c:
            c.execute(self.q["history_add"], {
                "queues": [r.queue for r in rows], "tasks": [r.task for r in rows],
                "buckets": [r.bucket for r in rows], "succeeded": [r.succeeded for r in rows],
                "retried": [r.retried for r in rows], "dead": [r.dead for r in rows],
                "cancelled": [r.cancelled for r in rows], "runs": [r.runs for r in rows],
                "p50": [r.p50 for r in rows], "p95": [r.p95 for r in rows],
                "oldest_wait": [r.oldest_wait for r in rows]})

    def history_list(self, since: datetime, queue: str | None = None,
                     task: str | None = None) -> list[HistoryBucket]:
        with self._conn() as c:
            rows = c.execute(self.q["history_list"],
                             {"since": since, "queue": queue, "task": task}).fetchall()
        return [HistoryBucket(r[0], r[1], aware(r[2]), *r[3:]) for r in rows]  # type: ignore[arg-type]

    def history_prune(self, keep_seconds: float) -> int:
        with self._conn() as c:
            return int(c.execute(self.q["history_prune"], self._p(keep=keep_seconds)).rowcount)

    def workers_running(self) -> dict[str, int]:
        with self._conn() as c:
            return {r[0]: r[1] for r in c.execute(self.q["workers_running"])}

    def jobs_waiting_by_task(self) -> list[WaitingTask]:
        with self._conn() as c:
            return [WaitingTask(r[0], r[1], int(r[2]), aware(r[3]))  # type: ignore[arg-type]
                    for r in c.execute(self.q["jobs_waiting_by_task"])]

    def groups_busiest(self, queue: str | None = None, limit: int = 10) -> list[GroupStats]:
        with self._conn() as c:
            rows = c.execute(self.q["groups_busiest"], {"queue": queue, "limit": limit})
            return [GroupStats(r[0], r[1], int(r[2]), int(r[3])) for r in rows]

    def queue_group_counts(self) -> list[QueueGroups]:
        with self._conn() as c:
            return [QueueGroups(r[0], int(r[1]), int(r[2]))
                    for r in c.execute(self.q["queue_group_counts"])]

    def jobs_search(self, text: str | None = None, state: JobState | None = None,
                    queue: str | None = None, limit: int = 50) -> list[Job]:
        with self._conn() as c:
            cur = c.cursor(row_factory=dict_row)
            rows = cur.execute(self.q["jobs_search"], search_params(text, state, queue, limit))
            return [job_from_row(r, aware, decoded) for r in rows.fetchall()]

    def jobs_discard(self, ids: list[int]) -> list[int]:
        if not ids:
            return []
        with self._conn() as c:
            return sorted(r[0] for r in c.execute(self.q["jobs_discard"], {"ids": list(ids)}))

