"""Durable workflow storage for PostgreSQL: recorded steps and events."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ...errors import ShiftworkError
from ..rows import StepRecord, aware


class PostgresWorkflows:
    q: dict[str, str]
    _conn: Any
    _p: Any

    def workflow_steps_get(self, job_id: int) -> dict[str, StepRecord]:
        with self._conn() as c:
            rows = c.execute(self.q["workflow_steps_get"], {"job": job_id}).fetchall()
        return {r[0]: StepRecord(r[0], r[1], r[2], aware(r[3]), r[4], aware(r[5])) for r in rows}

    def workflow_step_record(self, job_id: int, attempt: int, name: str, status: str,
                             result_json: str | None, wake_at: datetime | None) -> bool:
        with self._conn() as c:
            cur = c.execute(self.q["workflow_step_record"], self._p(
                job=job_id, attempt=attempt, name=name, status=status, result=result_json,
                wake_at=wake_at))
            return bool(cur.rowcount)

    def workflow_event_take(self, job_id: int, attempt: int, name: str,
                            step: str) -> tuple[bool, Any]:
        """Consume the oldest pending event and record it as ``step``, in one transaction."""
        with self._conn() as c, c.transaction():
            if c.execute(self.q["workflow_job_lock"], {"job": job_id, "attempt": attempt}
                         ).fetchone() is None:
                raise _lost(job_id, attempt)
            row = c.execute(self.q["workflow_event_take"],
                            {"job": job_id, "name": name, "step": step}).fetchone()
            if row is None:
                return False, None
            c.execute(self.q["workflow_step_record"], self._p(
                job=job_id, attempt=attempt, name=step, status="done",
                result=_dumps(row[0]), wake_at=None))
            return True, row[0]

    def workflow_event_send(self, job_id: int, name: str, payload_json: str) -> int:
        with self._conn() as c, c.transaction():
            row = c.execute(self.q["workflow_event_insert"], self._p(
                job=job_id, name=name, payload=payload_json)).fetchone()
            if row is None:
                raise ShiftworkError(f"workflow {job_id} is not active (finished or unknown); "
                                     "its events can no longer be delivered")
            c.execute(self.q["workflow_wake"], self._p(job=job_id))
            c.execute(self.q["jobs_notify"], {"channel": self.channel,  # type: ignore[attr-defined]
                                              "queues": ["*"]})
            return int(row[0])


def _dumps(value: Any) -> str:
    import json

    return json.dumps(value)


def _lost(job_id: int, attempt: int) -> Exception:
    from ...workflow.errors import LeaseLost

    return LeaseLost(f"job {job_id} attempt {attempt} no longer holds its lease")
