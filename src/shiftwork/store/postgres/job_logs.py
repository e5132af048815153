"""Per-job logs for PostgreSQL: what a job logged while it ran, per attempt."""

from __future__ import annotations

from shiftwork.model.records import JobLogLine
from shiftwork.store.postgres.core import PostgresCore
from shiftwork.store.rows import aware


class PostgresJobLogs:
    """PostgreSQL's statements of ``store.job_logs``, on the store's connections."""

    def __init__(self, core: PostgresCore) -> None:
        self._core = core  # the PostgresStore: connections, queries
        self.q = core.q
        self._conn = core._conn

    def add(self, job_id: int, lines: list[JobLogLine]) -> None:
        if not lines:
            return
        with self._conn() as c:
            c.execute(self.q["job_logs_add"], {
                "job": job_id, "attempts": [ln.attempt for ln in lines],
                "seqs": [ln.seq for ln in lines], "ats": [ln.at for ln in lines],
                "levels": [ln.level for ln in lines], "loggers": [ln.logger for ln in lines],
                "messages": [ln.message for ln in lines]})

    def list_lines(self, job_id: int, attempt: int = 0, after: tuple[int, int] = (0, 0),
                   limit: int = 1000) -> list[JobLogLine]:
        with self._conn() as c:
            rows = c.execute(self.q["job_logs_list"], {
                "job": job_id, "attempt": attempt, "after_attempt": after[0],
                "after_seq": after[1], "limit": limit}).fetchall()
        return [JobLogLine(r[0], r[1], aware(r[2]), r[3], r[4], r[5])  # type: ignore[arg-type]
                for r in rows]
