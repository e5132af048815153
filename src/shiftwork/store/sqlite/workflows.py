"""Durable workflow storage for SQLite: recorded steps and events."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from ...errors import ShiftworkError
from ..rows import StepRecord, from_ts


class SQLiteWorkflows:
    q: dict[str, str]
    conn: Any
    _tx: Any
    _now: Any

    def workflow_steps_get(self, job_id: int) -> dict[str, StepRecord]:
        rows = self.conn.execute(self.q["workflow_steps_get"], {"job": job_id}).fetchall()
        return {r[0]: StepRecord(r[0], r[1], json.loads(r[2]) if r[2] is not None else None,
                                 from_ts(r[3]), r[4], from_ts(r[5])) for r in rows}

    def workflow_step_record(self, job_id: int, attempt: int, name: str, status: str,
                             result_json: str | None, wake_at: datetime | None) -> bool:
        with self._tx() as c:
            cur = c.execute(self.q["workflow_step_record"], {
                "job": job_id, "attempt": attempt, "name": name, "status": status,
                "result": result_json, "now": self._now(),
                "wake_at": wake_at.timestamp() if wake_at else None})
            return bool(cur.rowcount)

    def workflow_event_take(self, job_id: int, attempt: int, name: str,
                            step: str) -> tuple[bool, Any]:
        with self._tx() as c:
            if c.execute(self.q["workflow_job_held"], {"job": job_id, "attempt": attempt}
                         ).fetchone() is None:
                from ...errors import LeaseLost

                raise LeaseLost(f"job {job_id} attempt {attempt} no longer holds its lease")
            row = c.execute(self.q["workflow_event_take"],
                            {"job": job_id, "name": name, "step": step}).fetchone()
            if row is None:
                return False, None
            c.execute(self.q["workflow_step_record"], {
                "job": job_id, "attempt": attempt, "name": step, "status": "done",
                "result": row[0], "now": self._now(), "wake_at": None})
            return True, json.loads(row[0]) if row[0] is not None else None

    def workflow_event_send(self, job_id: int, name: str, payload_json: str) -> int:
        with self._tx() as c:
            now = self._now()
            row = c.execute(self.q["workflow_event_insert"], {
                "job": job_id, "name": name, "payload": payload_json, "now": now}).fetchone()
            if row is None:
                raise ShiftworkError(f"workflow {job_id} is not active (finished or unknown); "
                                     "its events can no longer be delivered")
            c.execute(self.q["workflow_wake"], {"job": job_id, "now": now})
            return int(row[0])
