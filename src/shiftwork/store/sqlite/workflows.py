"""Durable workflow storage for SQLite: instances, recorded steps and events."""

from __future__ import annotations

import json
from datetime import datetime
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
from shiftwork.store.rows import FIRST_PAGE, from_ts
from shiftwork.store.sqlite.core import SQLiteCore


class SQLiteWorkflows:
    """SQLite's workflow statements (``store.workflows``), on the store's connections."""

    def __init__(self, core: SQLiteCore) -> None:
        self._core = core  # the SQLiteStore: connection, queries, clock
        self.q = core.q
        self._tx = core._tx
        self._now = core._now

    def steps_get(self, job_id: int) -> dict[str, StepRecord]:
        rows = self._core.conn.execute(self.q["workflow_steps_get"], {"job": job_id}).fetchall()
        return {r[0]: _step(r) for r in rows}

    def begin(self, job_id: int, attempt: int, version: str
              ) -> tuple[WorkflowRun, dict[str, StepRecord]] | None:
        with self._tx() as c:
            c.execute(self.q["workflow_run_insert"], {"job": job_id, "attempt": attempt,
                                                      "version": version, "now": self._now()})
            row = c.execute(self.q["workflow_run_get"], {"job": job_id, "attempt": attempt}
                            ).fetchone()
            if row is None:
                return None
            steps = c.execute(self.q["workflow_steps_get"], {"job": job_id}).fetchall()
        return _run(row), {r[0]: _step(r) for r in steps}

    def run_set(self, job_id: int, attempt: int, status: str, *, cancelled: bool,
                cause: str | None = None, last_attempt: int | None = None,
                extend_attempts: int | None = None) -> bool:
        with self._tx() as c:
            done = c.execute(self.q["workflow_run_set"], {
                "job": job_id, "attempt": attempt, "status": status, "cancelled": int(cancelled),
                "cause": cause, "last_attempt": last_attempt, "now": self._now()}).rowcount
            if done and extend_attempts:
                c.execute(self.q["workflow_job_extend"],
                          {"job": job_id, "attempt": attempt, "extra": extend_attempts})
            return bool(done)

    def run_read(self, job_id: int) -> WorkflowRun | None:
        row = self._core.conn.execute(self.q["workflow_run_read"], {"job": job_id}).fetchone()
        return _run(row) if row else None

    def step_record(self, job_id: int, attempt: int, name: str, status: str,
                    result_json: str | None, wake_at: datetime | None, *,
                    position: int | None = None, kind: str = "step",
                    digest: str | None = None, outcome: str | None = None,
                    tries: int = 0, started_at: datetime | None = None) -> bool | None:
        with self._tx() as c:
            cur = c.execute(self.q["workflow_step_record"], {
                "job": job_id, "attempt": attempt, "name": name, "status": status,
                "result": result_json, "now": self._now(), "wake_at": _ts(wake_at),
                "position": position, "kind": kind, "digest": digest, "outcome": outcome,
                "tries": tries, "started_at": _ts(started_at)})
            if not cur.rowcount:
                return None
            flag = c.execute(self.q["workflow_cancel_flag"], {"job": job_id}).fetchone()
            return bool(flag[0])

    def event_take(self, job_id: int, attempt: int, name: str, step: str, *,
                   position: int | None = None, digest: str | None = None,
                   started_at: datetime | None = None) -> tuple[bool, Any]:
        with self._tx() as c:
            if c.execute(self.q["workflow_job_held"], {"job": job_id, "attempt": attempt}
                         ).fetchone() is None:
                raise LeaseLost(f"job {job_id} attempt {attempt} no longer holds its lease")
            row = c.execute(self.q["workflow_event_take"],
                            {"job": job_id, "name": name, "step": step}).fetchone()
            if row is None:
                return False, None
            c.execute(self.q["workflow_step_record"], {
                "job": job_id, "attempt": attempt, "name": step, "status": "done",
                "result": row[0], "now": self._now(), "wake_at": None, "position": position,
                "kind": "wait", "digest": digest, "outcome": None, "tries": 0,
                "started_at": _ts(started_at)})
            return True, json.loads(row[0]) if row[0] is not None else None

    def events_take(self, job_id: int, attempt: int, names: list[str], *,
                    started_at: datetime | None = None) -> list[tuple[bool, Any]]:
        out: list[tuple[bool, Any]] = []
        with self._tx() as c:
            if c.execute(self.q["workflow_job_held"], {"job": job_id, "attempt": attempt}
                         ).fetchone() is None:
                raise LeaseLost(f"job {job_id} attempt {attempt} no longer holds its lease")
            now = self._now()
            for name in names:
                row = c.execute(self.q["workflow_event_take"],
                                {"job": job_id, "name": name, "step": name}).fetchone()
                if row is None:
                    out.append((False, None))
                    continue
                c.execute(self.q["workflow_step_record"], {
                    "job": job_id, "attempt": attempt, "name": name, "status": "done",
                    "result": row[0], "now": now, "wake_at": None, "position": None,
                    "kind": "wait", "digest": None, "outcome": None, "tries": 0,
                    "started_at": _ts(started_at)})
                out.append((True, json.loads(row[0]) if row[0] is not None else None))
        return out

    def event_find(self, job_id: int, name: str, key: str) -> int | None:
        row = self._core.conn.execute(self.q["workflow_event_by_key"],
                                {"job": job_id, "name": name, "key": key}).fetchone()
        return int(row[0]) if row else None

    def event_send(self, job_id: int, name: str, payload_json: str,
                   key: str | None = None, *,
                   join: tuple[str, int] | None = None) -> int:
        check_join(key, join)
        with self._tx() as c:
            now = self._now()
            row = c.execute(self.q["workflow_event_insert"], {
                "job": job_id, "name": name, "payload": payload_json, "now": now,
                "key": key}).fetchone()
            if row is None:
                if key is not None and c.execute(self.q["workflow_job_active"],
                                                 {"job": job_id}).fetchone() is not None:
                    dup = c.execute(self.q["workflow_event_by_key"],
                                    {"job": job_id, "name": name, "key": key}).fetchone()
                    return int(dup[0])  # sent before with this key: not again
                raise ShiftworkError(f"workflow {job_id} is not active (finished or unknown); "
                                     "its events can no longer be delivered")
            if join is not None and join_reported(c, self.q, job_id, key, join) < join[1]:
                return int(row[0])  # members still out: the last one's report wakes it
            c.execute(self.q["workflow_wake"], {"job": job_id, "now": now})
            return int(row[0])

    def cancel(self, job_id: int) -> bool:
        with self._tx() as c:
            row = c.execute(self.q["workflow_cancel"], {"job": job_id, "now": self._now()}
                            ).fetchone()
            return row is not None

    def summaries(self, status: str | None = None, task: str | None = None,
                  limit: int = 50) -> list[WorkflowSummary]:
        rows = self._core.conn.execute(self.q["workflows_list"],
                                 {"status": status, "task": task, "limit": limit}).fetchall()
        return [WorkflowSummary(r[0], r[1], r[2], r[3], r[4], int(r[5]), from_ts(r[6]),
                                from_ts(r[7])) for r in rows]


    def page(self, status: str | None = None, task: str | None = None,
             before: int | None = None, limit: int = 50) -> list[WorkflowLine]:
        rows = self._core.conn.execute(self.q[_page_query(status)], {
            "status": status, "state": status, "task": task,
                "before": FIRST_PAGE if before is None else before, "limit": limit}).fetchall()
        return [WorkflowLine(r[0], r[1], r[2], r[3], r[4], _at(r[5]), _at(r[6]), from_ts(r[7]),
                             _at(r[8]), r[9], r[10], r[11], from_ts(r[12]),
                             json.loads(r[13]) if r[13] is not None else None) for r in rows]

    def events_list(self, job_id: int, limit: int = 100) -> list[WorkflowEvent]:
        rows = self._core.conn.execute(self.q["workflow_events_list"],
                                 {"job": job_id, "limit": limit}).fetchall()
        return [WorkflowEvent(r[0], r[1], json.loads(r[2]) if r[2] is not None else None, r[3],
                              _at(r[4]), r[5]) for r in rows]

    def live(self, job_id: int) -> WorkflowLive | None:
        r = self._core.conn.execute(self.q["workflow_live"], {"job": job_id}).fetchone()
        if r is None:
            return None
        steps = sorted(json.loads(r[6] or "[]"), key=lambda s: s[12])
        return WorkflowLive(JobState(r[0]), _at(r[1]), from_ts(r[2]), from_ts(r[3]), _at(r[4]),
                            WorkflowStatus(r[5]) if r[5] else None,
                            [_step([*s[:2], s[2], *s[3:12]]) for s in steps])

    # -- talking to a running workflow ---------------------------------------------

    def state_set(self, job_id: int, attempt: int, key: str, value_json: str,
                  stamp: int) -> None:
        with self._tx() as c:
            c.execute(self.q["workflow_state_set"], {
                "job": job_id, "attempt": attempt, "key": key, "value": value_json,
                "stamp": stamp, "now": self._now()})

    def state_get(self, job_id: int) -> dict[str, Any]:
        rows = self._core.conn.execute(self.q["workflow_state_get"], {"job": job_id}).fetchall()
        return {r[0]: json.loads(r[1]) for r in rows}

    def update_send(self, job_id: int, name: str, payload_json: str) -> int:
        with self._tx() as c:
            now = self._now()
            row = c.execute(self.q["workflow_update_insert"], {
                "job": job_id, "name": name, "payload": payload_json, "now": now}).fetchone()
            if row is None:
                raise ShiftworkError(f"workflow {job_id} is not active (finished or unknown); "
                                     f"update {name!r} can no longer be delivered")
            c.execute(self.q["workflow_wake"], {"job": job_id, "now": now})
            return int(row[0])

    def update_next(self, job_id: int, name: str) -> tuple[int, Any] | None:
        row = self._core.conn.execute(self.q["workflow_update_next"],
                                      {"job": job_id, "name": name}).fetchone()
        if row is None:
            return None
        return int(row[0]), json.loads(row[1]) if row[1] is not None else None

    def update_resolve(self, job_id: int, attempt: int, update_id: int, *, accepted: bool,
                       result_json: str | None, error_json: str | None, step: str,
                       position: int | None = None,
                       started_at: datetime | None = None) -> bool:
        with self._tx() as c:
            if c.execute(self.q["workflow_job_held"], {"job": job_id, "attempt": attempt}
                         ).fetchone() is None:
                raise LeaseLost(f"job {job_id} attempt {attempt} no longer holds its lease")
            now = self._now()
            row = c.execute(self.q["workflow_update_resolve"], {
                "id": update_id, "job": job_id,
                "status": "accepted" if accepted else "rejected",
                "result": result_json, "error": error_json,
                "step": step if accepted else None, "now": now}).fetchone()
            if row is None:
                return False
            if accepted:  # the result and its record: one commit
                c.execute(self.q["workflow_step_record"], {
                    "job": job_id, "attempt": attempt, "name": step, "status": "done",
                    "result": result_json, "now": now, "wake_at": None, "position": position,
                    "kind": "update", "digest": None, "outcome": None, "tries": 0,
                    "started_at": _ts(started_at)})
            return True  # (the caller sees the commit through data_version)

    def update_read(self, update_id: int) -> UpdateOutcome | None:
        r = self._core.conn.execute(self.q["workflow_update_read"], {"id": update_id}
                                    ).fetchone()
        if r is None:
            return None
        return UpdateOutcome(r[0], json.loads(r[1]) if r[1] is not None else None,
                             json.loads(r[2]) if r[2] is not None else None, JobState(r[3]))

    def updates_list(self, job_id: int, limit: int = 100) -> list[WorkflowUpdate]:
        rows = self._core.conn.execute(self.q["workflow_updates_list"],
                                       {"job": job_id, "limit": limit}).fetchall()
        return [WorkflowUpdate(r[0], r[1], json.loads(r[2]) if r[2] is not None else None,
                               r[3], json.loads(r[4]) if r[4] is not None else None,
                               json.loads(r[5]) if r[5] is not None else None, r[6],
                               _at(r[7]), from_ts(r[8])) for r in rows]


def _ts(value: datetime | None) -> float | None:
    return value.timestamp() if value is not None else None


def _run(r: Any) -> WorkflowRun:
    return WorkflowRun(r[0], r[1], bool(r[2]), r[3], r[4], bool(r[5]), int(r[6]))


def _step(r: Any) -> StepRecord:
    return StepRecord(r[0], r[1], json.loads(r[2]) if r[2] is not None else None, from_ts(r[3]),
                      r[4], from_ts(r[5]), r[6], r[7], r[8], r[9], r[10], from_ts(r[11]))


def _at(value: float) -> datetime:
    """A NOT NULL time column."""
    at = from_ts(value)
    assert at is not None
    return at


def _page_query(status: str | None) -> str:
    """A workflow status walks its own index; a job state (or none) the primary key."""
    return "workflows_page_by_status" if status in WORKFLOW_STATUSES else "workflows_page"
