"""Durable workflow storage for PostgreSQL: instances, recorded steps and events."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from shiftwork.core.errors import LeaseLost, ShiftworkError
from shiftwork.core.states import WORKFLOW_STATUSES, JobState, WorkflowStatus
from shiftwork.model.records import (
    StepRecord,
    UpdateOutcome,
    WorkflowEvent,
    WorkflowLine,
    WorkflowLive,
    WorkflowRun,
    WorkflowSummary,
    WorkflowUpdate,
)
from shiftwork.store.joins import check_join, join_reported
from shiftwork.store.postgres.core import PostgresCore
from shiftwork.store.rows import FIRST_PAGE, aware


class PostgresWorkflows:
    """PostgreSQL's workflow statements (``store.workflows``), on the store's connections."""

    def __init__(self, core: PostgresCore) -> None:
        self._core = core  # the PostgresStore: connections, queries
        self.q = core.q
        self._conn = core._conn
        self._p = core._p
        self.channel = core.channel

    def steps_get(self, job_id: int) -> dict[str, StepRecord]:
        with self._conn() as c:
            rows = c.execute(self.q["workflow_steps_get"], {"job": job_id}).fetchall()
        return {r[0]: _step(r) for r in rows}

    def begin(self, job_id: int, attempt: int, version: str
              ) -> tuple[WorkflowRun, dict[str, StepRecord]] | None:
        with self._conn() as c, c.transaction():
            c.execute(self.q["workflow_run_insert"], self._p(job=job_id, attempt=attempt,
                                                             version=version))
            row = c.execute(self.q["workflow_run_get"], {"job": job_id, "attempt": attempt}
                            ).fetchone()
            if row is None:
                return None
            steps = c.execute(self.q["workflow_steps_get"], {"job": job_id}).fetchall()
        return WorkflowRun(*row), {r[0]: _step(r) for r in steps}

    def run_set(self, job_id: int, attempt: int, status: str, *, cancelled: bool,
                cause: str | None = None, last_attempt: int | None = None,
                extend_attempts: int | None = None) -> bool:
        with self._conn() as c, c.transaction():
            done = c.execute(self.q["workflow_run_set"], self._p(
                job=job_id, attempt=attempt, status=status, cancelled=cancelled, cause=cause,
                last_attempt=last_attempt)).rowcount
            if done and extend_attempts:
                c.execute(self.q["workflow_job_extend"],
                          {"job": job_id, "attempt": attempt, "extra": extend_attempts})
            return bool(done)

    def run_read(self, job_id: int) -> WorkflowRun | None:
        with self._conn() as c:
            row = c.execute(self.q["workflow_run_read"], {"job": job_id}).fetchone()
        return WorkflowRun(*row) if row else None

    def step_record(self, job_id: int, attempt: int, name: str, status: str,
                    result_json: str | None, wake_at: datetime | None, *,
                    position: int | None = None, kind: str = "step",
                    digest: str | None = None, outcome: str | None = None,
                    tries: int = 0, started_at: datetime | None = None) -> bool | None:
        with self._conn() as c:
            row = c.execute(self.q["workflow_step_record"], self._p(
                job=job_id, attempt=attempt, name=name, status=status, result=result_json,
                wake_at=wake_at, position=position, kind=kind, digest=digest, outcome=outcome,
                tries=tries, started_at=started_at)).fetchone()
        return None if row is None else bool(row[0])

    def event_take(self, job_id: int, attempt: int, name: str, step: str, *,
                   position: int | None = None, digest: str | None = None,
                   started_at: datetime | None = None) -> tuple[bool, Any]:
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
                result=json.dumps(row[0]), wake_at=None, position=position, kind="wait",
                digest=digest, outcome=None, tries=0, started_at=started_at))
            return True, row[0]

    def events_take(self, job_id: int, attempt: int, names: list[str], *,
                    started_at: datetime | None = None) -> list[tuple[bool, Any]]:
        out: list[tuple[bool, Any]] = []
        with self._conn() as c, c.transaction():
            if c.execute(self.q["workflow_job_lock"], {"job": job_id, "attempt": attempt}
                         ).fetchone() is None:
                raise _lost(job_id, attempt)
            for name in names:
                row = c.execute(self.q["workflow_event_take"],
                                {"job": job_id, "name": name, "step": name}).fetchone()
                if row is None:
                    out.append((False, None))
                    continue
                c.execute(self.q["workflow_step_record"], self._p(
                    job=job_id, attempt=attempt, name=name, status="done",
                    result=json.dumps(row[0]), wake_at=None, position=None, kind="wait",
                    digest=None, outcome=None, tries=0, started_at=started_at))
                out.append((True, row[0]))
        return out

    def event_find(self, job_id: int, name: str, key: str) -> int | None:
        with self._conn() as c:
            row = c.execute(self.q["workflow_event_by_key"],
                            {"job": job_id, "name": name, "key": key}).fetchone()
        return int(row[0]) if row else None

    def event_send(self, job_id: int, name: str, payload_json: str,
                   key: str | None = None, *,
                   join: tuple[str, int] | None = None) -> int:
        check_join(key, join)
        with self._conn() as c, c.transaction():
            if join is not None:
                c.execute(self.q["workflow_join_lock"], {"job": job_id})
            row = c.execute(self.q["workflow_event_insert"], self._p(
                job=job_id, name=name, payload=payload_json, key=key)).fetchone()
            if row is None:
                if key is not None and c.execute(self.q["workflow_job_active"],
                                                 {"job": job_id}).fetchone() is not None:
                    dup = c.execute(self.q["workflow_event_by_key"],
                                    {"job": job_id, "name": name, "key": key}).fetchone()
                    assert dup is not None  # the insert found it taken
                    return int(dup[0])  # sent before with this key: not again
                raise ShiftworkError(f"workflow {job_id} is not active (finished or unknown); "
                                     "its events can no longer be delivered")
            if join is not None and join_reported(c, self.q, job_id, key, join) < join[1]:
                return int(row[0])  # members still out: the last one's report wakes it
            c.execute(self.q["workflow_wake"], self._p(job=job_id))
            c.execute(self.q["jobs_notify"], {"channel": self.channel,
                                              "queues": ["*"]})
            return int(row[0])

    def cancel(self, job_id: int) -> bool:
        with self._conn() as c, c.transaction():
            row = c.execute(self.q["workflow_cancel"], self._p(job=job_id)).fetchone()
            if row is not None:
                c.execute(self.q["jobs_notify"], {"channel": self.channel,
                                                  "queues": ["*"]})
            return row is not None

    def summaries(self, status: str | None = None, task: str | None = None,
                  limit: int = 50) -> list[WorkflowSummary]:
        with self._conn() as c:
            rows = c.execute(self.q["workflows_list"],
                             {"status": status, "task": task, "limit": limit}).fetchall()
        return [WorkflowSummary(r[0], r[1], r[2], r[3], r[4], int(r[5]), aware(r[6]),
                                aware(r[7])) for r in rows]


    def page(self, status: str | None = None, task: str | None = None,
             before: int | None = None, limit: int = 50) -> list[WorkflowLine]:
        with self._conn() as c:
            rows = c.execute(self.q[_page_query(status)], {
                "status": status, "state": status, "task": task,
                "before": FIRST_PAGE if before is None else before, "limit": limit}).fetchall()
        return [WorkflowLine(r[0], r[1], r[2], r[3], r[4], _at(r[5]), _at(r[6]), aware(r[7]),
                             _at(r[8]), r[9], r[10], r[11], aware(r[12]), r[13]) for r in rows]

    def events_list(self, job_id: int, limit: int = 100) -> list[WorkflowEvent]:
        with self._conn() as c:
            rows = c.execute(self.q["workflow_events_list"],
                             {"job": job_id, "limit": limit}).fetchall()
        return [WorkflowEvent(r[0], r[1], r[2], r[3], _at(r[4]), r[5]) for r in rows]

    def live(self, job_id: int) -> WorkflowLive | None:
        with self._conn() as c:
            r = c.execute(self.q["workflow_live"], {"job": job_id}).fetchone()
        if r is None:
            return None
        return WorkflowLive(JobState(r[0]), _at(r[1]), aware(r[2]), aware(r[3]), _at(r[4]),
                            WorkflowStatus(r[5]) if r[5] else None,
                            [_step([*s[:3], _epoch(s[3]), s[4], _epoch(s[5]), *s[6:11],
                                    _epoch(s[11])]) for s in r[6] or []])

    # -- talking to a running workflow ---------------------------------------------

    def state_set(self, job_id: int, attempt: int, key: str, value_json: str,
                  stamp: int) -> None:
        with self._conn() as c:
            c.execute(self.q["workflow_state_set"], self._p(
                job=job_id, attempt=attempt, key=key, value=value_json, stamp=stamp))

    def state_get(self, job_id: int) -> dict[str, Any]:
        with self._conn() as c:
            rows = c.execute(self.q["workflow_state_get"], {"job": job_id}).fetchall()
        return {r[0]: r[1] for r in rows}

    def update_send(self, job_id: int, name: str, payload_json: str) -> int:
        with self._conn() as c, c.transaction():
            row = c.execute(self.q["workflow_update_insert"], self._p(
                job=job_id, name=name, payload=payload_json)).fetchone()
            if row is None:
                raise ShiftworkError(f"workflow {job_id} is not active (finished or unknown); "
                                     f"update {name!r} can no longer be delivered")
            c.execute(self.q["workflow_wake"], self._p(job=job_id))
            c.execute(self.q["jobs_notify"], {"channel": self.channel, "queues": ["*"]})
            return int(row[0])

    def update_next(self, job_id: int, name: str) -> tuple[int, Any] | None:
        with self._conn() as c:
            row = c.execute(self.q["workflow_update_next"],
                            {"job": job_id, "name": name}).fetchone()
        return None if row is None else (int(row[0]), row[1])

    def update_resolve(self, job_id: int, attempt: int, update_id: int, *, accepted: bool,
                       result_json: str | None, error_json: str | None, step: str,
                       position: int | None = None,
                       started_at: datetime | None = None) -> bool:
        with self._conn() as c, c.transaction():
            if c.execute(self.q["workflow_job_lock"], {"job": job_id, "attempt": attempt}
                         ).fetchone() is None:
                raise _lost(job_id, attempt)
            row = c.execute(self.q["workflow_update_resolve"], self._p(
                id=update_id, job=job_id, status="accepted" if accepted else "rejected",
                result=result_json, error=error_json,
                step=step if accepted else None)).fetchone()
            if row is None:
                return False
            if accepted:  # the result and its record: one commit
                c.execute(self.q["workflow_step_record"], self._p(
                    job=job_id, attempt=attempt, name=step, status="done", result=result_json,
                    wake_at=None, position=position, kind="update", digest=None,
                    outcome=None, tries=0, started_at=started_at))
            c.execute(self.q["workflow_update_notify"], {"channel": self._core.done_channel})
            return True

    def update_read(self, update_id: int) -> UpdateOutcome | None:
        with self._conn() as c:
            r = c.execute(self.q["workflow_update_read"], {"id": update_id}).fetchone()
        return None if r is None else UpdateOutcome(r[0], r[1], r[2], JobState(r[3]))

    def updates_list(self, job_id: int, limit: int = 100) -> list[WorkflowUpdate]:
        with self._conn() as c:
            rows = c.execute(self.q["workflow_updates_list"],
                             {"job": job_id, "limit": limit}).fetchall()
        return [WorkflowUpdate(r[0], r[1], r[2], r[3], r[4], r[5], r[6], _at(r[7]), aware(r[8]))
                for r in rows]


def _step(r: Any) -> StepRecord:
    return StepRecord(r[0], r[1], r[2], aware(r[3]), r[4], aware(r[5]), r[6], r[7], r[8], r[9],
                      r[10], aware(r[11]))


def _lost(job_id: int, attempt: int) -> BaseException:
    return LeaseLost(f"job {job_id} attempt {attempt} no longer holds its lease")


def _at(value: datetime) -> datetime:
    """A NOT NULL time column."""
    at = aware(value)
    assert at is not None
    return at


def _page_query(status: str | None) -> str:
    """A workflow status walks its own index; a job state (or none) the primary key."""
    return "workflows_page_by_status" if status in WORKFLOW_STATUSES else "workflows_page"


def _epoch(value: float | None) -> datetime | None:
    """A time the live query sent as Unix seconds (inside JSON)."""
    return None if value is None else datetime.fromtimestamp(float(value), UTC)
