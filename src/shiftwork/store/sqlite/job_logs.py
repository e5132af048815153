"""Per-job logs for SQLite: what a job logged while it ran, per attempt."""

from __future__ import annotations

import json

from shiftwork.model.records import JobLogLine
from shiftwork.store.rows import from_ts
from shiftwork.store.sqlite.core import SQLiteCore


class SQLiteJobLogs:
    """SQLite's statements of ``store.job_logs``, on the store's connections."""

    def __init__(self, core: SQLiteCore) -> None:
        self._core = core  # the SQLiteStore: connection, queries
        self.q = core.q
        self._tx = core._tx

    def add(self, job_id: int, lines: list[JobLogLine]) -> None:
        if not lines:
            return
        rows = json.dumps([[ln.attempt, ln.seq, ln.at.timestamp(), ln.level, ln.logger,
                            ln.message] for ln in lines], ensure_ascii=False)
        with self._tx() as c:
            c.execute(self.q["job_logs_add"], {"job": job_id, "rows": rows})

    def list_lines(self, job_id: int, attempt: int = 0, after: tuple[int, int] = (0, 0),
                   limit: int = 1000) -> list[JobLogLine]:
        rows = self._core.conn.execute(self.q["job_logs_list"], {
            "job": job_id, "attempt": attempt, "after_attempt": after[0],
            "after_seq": after[1], "limit": limit}).fetchall()
        return [JobLogLine(r[0], r[1], from_ts(r[2]), r[3], r[4], r[5])  # type: ignore[arg-type]
                for r in rows]
