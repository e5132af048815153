"""The schedule firing transactions: the leader's batch, a person's trigger or backfill,
the leader's passes over occurrences (outcomes, starting deadlines, the dead-man switch,
the items check) and a resume. Each runs on the store's schedule statements
(``store.schedules``, a :class:`~shiftwork.store.base.ScheduleStatements`): the deciding is
here, the SQL in each engine's ``schedules.sql``.

Exactly-once rests on two keys, not on leadership: ``schedule_runs``' primary key
(schedule, fire instant), inserted in the same transaction as the job and the cursor
advance, and the job's unique key. Leadership is checked on every leader write anyway
(the leader row must still name this owner and term and be unexpired), so a paused or
cut-off ex-leader writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from shiftwork.core.errors import ShiftworkError
from shiftwork.core.states import ACTIVE, JobState
from shiftwork.model.items import ItemsCheck
from shiftwork.model.new_job import NewJob
from shiftwork.model.records import EmptyRun, EnqueueResult, LateRun, RunFigures
from shiftwork.model.schedule_values import Catchup, DeadManCheck, RunKind, RunStatus
from shiftwork.schedules.definition import (
    ActiveRun,
    Decision,
    PendingRun,
    Plan,
    ScheduleDef,
    Snapshot,
    occurrence_job,
)
from shiftwork.schedules.errors import NotLeader, UnknownScheduleError
from shiftwork.schedules.records import Applied
from shiftwork.schedules.rows import def_from_row
from shiftwork.store.base import ScheduleStatements
from shiftwork.store.fleet import LEADER_NAME

Planner = Callable[[ScheduleDef, Snapshot, datetime], Plan]
#: The App's insert path (``App.insert_rows``): jobs and the open transaction's connection.
Insert = Callable[[list[NewJob], Any], list[EnqueueResult]]


def now_of(sql: ScheduleStatements, c: Any, owner: str | None, term: int | None) -> datetime:
    """The transaction's instant; with a term, only while that leadership holds."""
    if term is None:
        row = sql.one(c, "schedule_now")
    else:
        row = sql.one(c, "schedule_leader_check", leader=LEADER_NAME, owner=owner,
                          term=term)
        if row is None:
            raise NotLeader(f"term {term} of {owner} is over; nothing written")
    assert row is not None
    return row["now"]  # type: ignore[no-any-return]

def recheck(sql: ScheduleStatements, c: Any, owner: str | None, term: int | None) -> None:
    """Before commit: is the lease still ours? (A paused leader rolls back here.)"""
    if term is not None and sql.one(c, "schedule_leader_recheck", leader=LEADER_NAME,
                                        owner=owner, term=term) is None:
        raise NotLeader(f"term {term} of {owner} ended during the transaction; "
                        "rolled back")


class Firing:
    """The firing transactions on one store's schedule statements."""

    def __init__(self, sql: ScheduleStatements) -> None:
        self.sql = sql

    def apply(self, name: str, planner: Planner, owner: str | None = None,
                        term: int | None = None, *, insert: Insert) -> Applied:
        """Read a schedule's snapshot, ask ``planner``, write the plan: one transaction.

        With ``term`` the transaction first checks that this owner still holds that
        leadership (raising :class:`NotLeader` otherwise); without, it is a person's
        action (trigger, backfill) and relies on the keys alone. Jobs are inserted with
        ``insert(jobs, conn)``, the App's insert path.
        """
        with self.sql.tx() as c:
            now = now_of(self.sql, c, owner, term)
            row = self.sql.one(c, "schedules_lock_one" if term is None
                              else "schedules_try_lock_one", name=name)
            if row is None:
                if term is not None and self.sql.one(c, "schedules_get", name=name):
                    return Applied(Plan(), [], now)  # another transaction is deciding it
                raise UnknownScheduleError(f"no schedule named {name!r}")
            [(_, applied)] = self._fire_locked(c, [row], planner, term, now, insert)
            recheck(self.sql, c, owner, term)
        return applied

    def fire(self, names: list[str], planner: Planner, owner: str, term: int, *,
                       insert: Insert) -> list[tuple[str, Applied]]:
        """The leader's batch: many schedules' snapshots, plans and writes in one
        transaction, a few statements in all (not a few per occurrence).

        Schedules another transaction is deciding are skipped (the next pass finds them).
        Exactly-once still rests on the keys: the occurrences' primary key, the jobs'
        unique key. Raises :class:`NotLeader` unless ``(owner, term)`` holds, before and
        at commit. Returns ``(name, Applied)`` for each schedule decided.
        """
        with self.sql.tx() as c:
            now = now_of(self.sql, c, owner, term)
            rows = self.sql.rows(c, "schedules_try_lock_batch", names=self.sql.json(names))
            out = self._fire_locked(c, rows, planner, term, now, insert)
            recheck(self.sql, c, owner, term)
        return out

    def _fire_locked(self, c: Any, rows: list[dict[str, Any]], planner: Planner,
                     term: int | None, now: datetime, insert: Insert | None
                     ) -> list[tuple[str, Applied]]:
        """Snapshots, plans and writes for schedule rows locked in this transaction."""
        if not rows:
            return []
        opens: dict[str, list[dict[str, Any]]] = {r["name"]: [] for r in rows}
        for r in self.sql.rows(c, "schedule_runs_open_batch", names=self.sql.json(list(opens))):
            opens[r["schedule"]].append(r)
        decided: list[tuple[ScheduleDef, Plan, datetime | None]] = []
        for row in rows:
            defn = def_from_row(row)
            active, pending = [], []
            for r in opens[defn.name]:
                if r["status"] == RunStatus.PENDING:
                    pending.append(PendingRun(r["fire_at"], RunKind(r["kind"])))
                elif r["job_state"] is not None and JobState(r["job_state"]) in ACTIVE:
                    active.append(ActiveRun(r["fire_at"], r["job_id"],
                                            bool(r["cancel_requested"])))
            override = row["catchup_override"]
            snap = Snapshot(cursor=row["next_fire_at"], paused=bool(row["paused"]),
                            catchup_override=Catchup(override) if override else None,
                            active=tuple(active), pending=tuple(pending))
            decided.append((defn, planner(defn, snap, now), snap.cursor))
        results = self._write_plans(c, [(d, p) for d, p, _ in decided], term, now, insert)
        t = self.sql.instant
        moves = [{"name": d.name, "cursor": t(p.cursor or cursor), "old_cursor": t(cursor),
                  "clear_override": p.clear_override, "missed_unrecorded": p.missed_unrecorded}
                 for d, p, cursor in decided
                 if p.cursor is not None or p.clear_override or p.missed_unrecorded]
        if moves:
            got = self.sql.rows(c, "schedules_advance_batch", rows=self.sql.json(moves))
            # Postgres counts them in one row; SQLite returns one row each.
            moved = got[0]["moved"] if got and "moved" in got[0] else len(got)
            if moved != len(moves):  # cannot happen under the row locks; never half a plan
                raise ShiftworkError("a schedule's cursor moved under us; retrying")
        return [(d.name, Applied(p, enqueued, now, written))
                for (d, p, _), (enqueued, written) in zip(decided, results, strict=True)]

    def _write_plan(self, c: Any, defn: ScheduleDef, plan: Plan, term: int | None,
                    now: datetime, written: list[tuple[str, Decision]] | None = None,
                    insert: Insert | None = None) -> list[tuple[datetime, int]]:
        [(enqueued, done)] = self._write_plans(c, [(defn, plan)], term, now, insert)
        if written is not None:
            written += done
        return enqueued

    def _write_plans(self, c: Any, plans: list[tuple[ScheduleDef, Plan]], term: int | None,
                     now: datetime, insert: Insert | None
                     ) -> list[tuple[list[tuple[datetime, int]], list[tuple[str, Decision]]]]:
        """Write many schedules' plans: the new occurrences' jobs in one call of the App's
        insert, then the occurrences, their job ids included, in one statement. (Released
        and revived occurrences, rare, are written one by one.) Returns, per plan, the jobs
        enqueued ``(fire instant, job id)`` and what was written ``(new|released|revived, d)``.

        The jobs go first so that no statement has to go back and write their ids on the
        occurrences. The occurrence's primary key still decides: a job made for an
        occurrence that was recorded already (by a backfill, a trigger) is deleted again
        in this transaction, so it is never seen.
        """
        written: list[list[tuple[str, Decision]]] = [[] for _ in plans]
        enqueued: list[list[tuple[datetime, int]]] = [[] for _ in plans]
        t = self.sql.instant
        new_rows: list[dict[str, Any]] = []
        keys: list[tuple[str, datetime]] = []
        new_jobs: list[tuple[int, ScheduleDef, Decision, dict[str, Any]]] = []
        for i, (defn, plan) in enumerate(plans):
            for d in plan.new:
                dms = None
                # Not checked: no expectation, paused, or a backfill (late by design: the
                # switch watches the schedule's own runs)
                if (defn.expect_success_within is None or d.reason == "paused"
                        or d.kind is RunKind.BACKFILL):
                    dms = DeadManCheck.NONE.value
                row = {"schedule": defn.name, "fire_at": t(d.fire_at), "kind": d.kind.value,
                       "status": d.status.value, "reason": d.reason, "run_at": t(d.run_at),
                       "dms": dms, "job_id": None}
                new_rows.append(row)
                keys.append((defn.name, d.fire_at))
                if d.status is RunStatus.ENQUEUED:
                    new_jobs.append((i, defn, d, row))
        made: list[EnqueueResult] = []
        if new_jobs:
            # Through the App's own insert (the end of every enqueue path: validation,
            # tracing), in this transaction, all of the batch's jobs in one call.
            assert insert is not None, "a plan that enqueues needs the App's insert"
            made = insert([occurrence_job(defn, d) for _, defn, d, _ in new_jobs], c)
            for (_, _, _, row), result in zip(new_jobs, made, strict=True):
                row["job_id"] = int(result.id)
        inserted: set[tuple[str, datetime]] = set()
        if new_rows:
            got = self.sql.rows(c, "schedule_runs_insert_batch", rows=self.sql.json(new_rows),
                               term=term, count=len(new_rows))
            # Postgres counts them (a row without a schedule) and lists them only when not
            # all were new; SQLite lists them.
            if any(r["schedule"] is None and r["inserted"] == len(new_rows) for r in got):
                inserted = set(keys)
            else:
                inserted = {(r["schedule"], r["fire_at"]) for r in got if r["schedule"]}
        discard = [int(result.id) for (_, defn, d, _), result in zip(new_jobs, made, strict=True)
                   if result.created and (defn.name, d.fire_at) not in inserted]
        if discard:  # made for occurrences recorded before: never committed
            self.sql.rows(c, "schedule_jobs_discard", ids=self.sql.json(discard))
        for i, (defn, plan) in enumerate(plans):
            for d in plan.new:
                if (defn.name, d.fire_at) in inserted:
                    written[i].append(("new", d))
        for (i, defn, d, _), result in zip(new_jobs, made, strict=True):
            if (defn.name, d.fire_at) in inserted:
                enqueued[i].append((d.fire_at, int(result.id)))
        to_enqueue: list[tuple[int, ScheduleDef, Decision]] = []
        for i, (defn, plan) in enumerate(plans):
            for d in plan.released:
                done = self.sql.one(c, "schedule_runs_release", name=defn.name,
                                   fire_at=d.fire_at, status=d.status.value, reason=d.reason,
                                   run_at=d.run_at, term=term,
                                   finished_at=now if d.status is RunStatus.MISSED else None)
                if done is not None:
                    written[i].append(("released", d))
                    if d.status is RunStatus.ENQUEUED:
                        to_enqueue.append((i, defn, d))
            for d in plan.revive:  # a backfill's: not checked by the dead-man switch either
                dms = DeadManCheck.NONE.value
                done = self.sql.one(c, "schedule_runs_revive", name=defn.name, fire_at=d.fire_at,
                                   status=d.status.value, reason=d.reason, run_at=d.run_at,
                                   dms=dms)
                if done is not None:
                    written[i].append(("revived", d))
                    if d.status is RunStatus.ENQUEUED:
                        to_enqueue.append((i, defn, d))
        if to_enqueue:
            assert insert is not None, "a plan that enqueues needs the App's insert"
            results = insert([occurrence_job(defn, d) for _, defn, d in to_enqueue], c)
            ids = []
            for (i, defn, d), result in zip(to_enqueue, results, strict=True):
                enqueued[i].append((d.fire_at, int(result.id)))
                ids.append({"schedule": defn.name, "fire_at": d.fire_at,
                            "job_id": int(result.id)})
            self.sql.rows(c, "schedule_runs_set_job_batch", rows=self.sql.json(ids))
        return list(zip(enqueued, written, strict=True))

    def runs_sync(self, owner: str, term: int
                           ) -> list[tuple[str, datetime, RunStatus, int | None]]:
        """Copy finished jobs' outcomes onto their occurrences; pause-on-failure.

        Returns the occurrences whose status changed.
        """
        out: list[tuple[str, datetime, RunStatus, int | None]] = []
        with self.sql.tx() as c:
            now_of(self.sql, c, owner, term)
            for query in ("schedule_runs_sync", "schedule_runs_sync_pruned",
                          "schedule_runs_sync_reopened"):
                for r in self.sql.rows(c, query):
                    out.append((r["schedule"], r["fire_at"], RunStatus(r["status"]),
                                r["job_id"]))
            for schedule, fire_at, status, job_id in out:
                if status is RunStatus.FAILED:
                    self.sql.rows(c, "schedules_pause_on_failure", name=schedule,
                                 reason=f"paused on failure: the run of {fire_at.isoformat()} "
                                        f"(job {job_id}) failed")
            recheck(self.sql, c, owner, term)
        return out

    def runs_expire(self, owner: str, term: int) -> list[tuple[str, datetime, int]]:
        """Cancel, as missed, jobs not started by fire instant + starting deadline."""
        out: list[tuple[str, datetime, int]] = []
        with self.sql.tx() as c:
            now_of(self.sql, c, owner, term)
            for r in self.sql.rows(c, "schedule_runs_past_deadline"):
                reason = (f"not started within the starting deadline of "
                          f"{r['starting_deadline']:g}s after its fire instant")
                if self.sql.one(c, "schedule_job_cancel_unstarted", job_id=r["job_id"],
                               message=reason) is None:
                    continue  # a worker claimed it meanwhile
                self.sql.rows(c, "schedule_runs_mark_missed", name=r["schedule"],
                             fire_at=r["fire_at"], reason=reason)
                out.append((r["schedule"], r["fire_at"], r["job_id"]))
            recheck(self.sql, c, owner, term)
        return out

    def runs_check_late(self, owner: str, term: int) -> list[LateRun]:
        """The dead-man switch: mark each occurrence whose window has passed ok or late.

        Returns the ones found late now: each is returned once, ever (the mark is
        written in this transaction, under the leader check).
        """
        late: list[LateRun] = []
        with self.sql.tx() as c:
            now_of(self.sql, c, owner, term)
            for r in self.sql.rows(c, "schedule_runs_dms_due"):
                verdict = DeadManCheck.OK if r["ok"] else DeadManCheck.LATE
                if self.sql.one(c, "schedule_runs_dms_set", name=r["schedule"],
                               fire_at=r["fire_at"], dms=verdict.value) is None:
                    continue
                if verdict is DeadManCheck.LATE:
                    late.append(LateRun(r["schedule"], r["fire_at"], RunStatus(r["status"]),
                                        r["job_id"], r["expect_success_within"]))
            recheck(self.sql, c, owner, term)
        return late

    def runs_check_items(self, owner: str, term: int,
                                  judge: Callable[[RunFigures, int | None, str | None],
                                                  tuple[ItemsCheck, str]]
                                  ) -> list[EmptyRun]:
        """The items check: judge each succeeded run of a schedule that expects items.

        ``judge(figures, expect_items, rule_name)`` gives the verdict and its note. Returns
        the runs found empty now: each once, ever (the verdict is written in this
        transaction, under the leader check, before anyone is told), as the dead-man
        switch does.
        """
        empty: list[EmptyRun] = []
        with self.sql.tx() as c:
            now_of(self.sql, c, owner, term)
            for r in self.sql.rows(c, "schedule_runs_items_due"):
                figures = RunFigures(r["schedule"], r["fire_at"], r["job_id"], r["items"],
                                     r["duration"])
                verdict, note = judge(figures, r["expect_items"], r["expect_items_rule"])
                if self.sql.one(c, "schedule_runs_items_set", name=r["schedule"],
                               fire_at=r["fire_at"], verdict=verdict.value,
                               note=note) is None:
                    continue
                if verdict is ItemsCheck.EMPTY:
                    empty.append(EmptyRun(r["schedule"], r["fire_at"], r["job_id"], r["items"],
                                          r["expect_items"], note))
            recheck(self.sql, c, owner, term)
        return empty

    def runs_prune(self, older_than: float) -> int:
        with self.sql.tx() as c:
            return len(self.sql.rows(c, "schedule_runs_prune", older_than=older_than))

    # -- people and tools -----------------------------------------------------------------

    def resume(self, name: str, resume: Callable[[ScheduleDef, datetime | None,
                                                             datetime], tuple[Plan, str | None]],
                         ) -> Plan | None:
        """Un-pause. ``resume`` returns the plan for the paused stretch (skipped rows and
        the new cursor) and the catch-up override; returns None if it was not paused."""
        with self.sql.tx() as c:
            now = now_of(self.sql, c, None, None)
            row = self.sql.one(c, "schedules_lock_one", name=name)
            if row is None:
                raise UnknownScheduleError(f"no schedule named {name!r}")
            if not row["paused"]:
                return None
            defn = def_from_row(row)
            plan, override = resume(defn, row["next_fire_at"], now)
            self._write_plan(c, defn, plan, None, now)
            self.sql.rows(c, "schedules_resume", name=name,
                         cursor=plan.cursor or row["next_fire_at"], catchup_override=override)
            return plan
