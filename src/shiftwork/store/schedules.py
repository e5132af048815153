"""Schedule storage shared by both engines: the transactions, written once.

Each engine's mixin (``postgres/schedules.py``, ``sqlite/schedules.py``) supplies four
primitives (a write transaction, a read connection, and running a named query from its
own ``schedules.sql``, converting instants both ways); the SQL stays per engine.

Exactly-once rests on two keys, not on leadership: ``schedule_runs``' primary key
(schedule, fire instant), inserted in the same transaction as the job and the cursor
advance, and the job's unique key. Leadership is checked on every leader write anyway
(the leader row must still name this owner and term and be unexpired), so a paused or
cut-off ex-leader writes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from shiftwork.core.errors import ConfigurationError, ShiftworkError
from shiftwork.core.states import ACTIVE, JobState
from shiftwork.model.items import ItemsCheck
from shiftwork.model.new_job import NewJob
from shiftwork.model.records import (
    Applied,
    EmptyRun,
    EnqueueResult,
    LateRun,
    RunFigures,
    ScheduleInfo,
    ScheduleRun,
    ScheduleRunLine,
)
from shiftwork.schedules.definition import (
    ActiveRun,
    Catchup,
    DeadManCheck,
    Decision,
    PendingRun,
    Plan,
    RunKind,
    RunStatus,
    ScheduleDef,
    Snapshot,
    occurrence_job,
)
from shiftwork.store.reconcile import chunks, fingerprint, plan_reconcile
from shiftwork.store.runtime_schedules import CODE, RUNTIME, ScheduleNameTaken

LEADER_NAME = "shiftwork.leader"

#: Columns that hold instants, converted from each engine's representation on read.
TIME_COLUMNS = frozenset({
    "now", "fire_at", "run_at", "recorded_at", "finished_at", "dms_at", "next_fire_at",
    "created_at", "updated_at", "removed_at", "last_fire_at", "last_success_at",
    "last_late_fire_at", "last_empty_fire_at", "last_full_fire_at", "job_started_at",
    "job_finished_at",
})

Planner = Callable[[ScheduleDef, Snapshot, datetime], Plan]
#: The App's insert path (``App.insert_rows``): jobs and the open transaction's connection.
Insert = Callable[[list[NewJob], Any], list[EnqueueResult]]


class NotLeader(ShiftworkError):
    """This scheduler's term is over: the write was not made."""


class UnknownScheduleError(ShiftworkError, LookupError):
    """No schedule with that name."""


_DEF_COLUMNS = ("name", "cron", "tz", "task", "args", "queue", "priority", "max_attempts",
                "timeout", "catchup", "catchup_window", "catchup_cap", "overlap",
                "starting_deadline", "jitter", "expect_success_within", "pause_on_failure",
                "expect_items", "expect_items_rule")
#: Definitions read by the leader's passes, by their stored values: the same schedules
#: come due pass after pass, and building (and checking) a ScheduleDef is most of reading one.
_DEFS: dict[tuple[Any, ...], ScheduleDef] = {}
_DEFS_MAX = 20_000


def def_from_row(row: dict[str, Any]) -> ScheduleDef:
    if not isinstance(row["args"], str):  # decoded JSON (not hashable): not remembered
        return _def_from_row(row)
    key = tuple([row.get(k) for k in _DEF_COLUMNS])
    defn = _DEFS.get(key)
    if defn is None:
        if len(_DEFS) >= _DEFS_MAX:
            _DEFS.clear()
        defn = _DEFS[key] = _def_from_row(row)
    return defn


def _def_from_row(row: dict[str, Any]) -> ScheduleDef:
    args = row["args"]
    return ScheduleDef(
        name=row["name"], cron=row["cron"], tz=row["tz"], task=row["task"],
        args_json=args if isinstance(args, str) else json.dumps(args, separators=(",", ":")),
        queue=row["queue"], priority=row["priority"], max_attempts=row["max_attempts"],
        timeout=row["timeout"], catchup=row["catchup"], catchup_window=row["catchup_window"],
        catchup_cap=row["catchup_cap"], overlap=row["overlap"],
        starting_deadline=row["starting_deadline"], jitter=row["jitter"],
        expect_success_within=row["expect_success_within"],
        pause_on_failure=bool(row["pause_on_failure"]),
        expect_items=row.get("expect_items"), expect_items_rule=row.get("expect_items_rule"),
    )


def def_params(d: ScheduleDef) -> dict[str, Any]:
    return {
        "name": d.name, "cron": d.cron, "tz": d.tz, "task": d.task, "args": d.args_json,
        "queue": d.queue, "priority": d.priority, "max_attempts": d.max_attempts,
        "timeout": d.timeout, "catchup": d.catchup.value, "catchup_window": d.catchup_window,
        "catchup_cap": d.catchup_cap, "overlap": d.overlap.value,
        "starting_deadline": d.starting_deadline, "jitter": d.jitter,
        "expect_success_within": d.expect_success_within,
        "pause_on_failure": d.pause_on_failure, "definition_hash": d.definition_hash(),
        "expect_items": d.expect_items, "expect_items_rule": d.expect_items_rule,
    }


def run_from_row(r: dict[str, Any]) -> ScheduleRun:
    return ScheduleRun(schedule=r["schedule"], fire_at=r["fire_at"], kind=RunKind(r["kind"]),
                       status=RunStatus(r["status"]), reason=r["reason"], job_id=r["job_id"],
                       run_at=r["run_at"], recorded_at=r["recorded_at"],
                       finished_at=r["finished_at"],
                       dms=DeadManCheck(r["dms"]) if r["dms"] is not None else None,
                       items=r.get("items"),
                       items_check=ItemsCheck(r["items_check"]) if r.get("items_check") else None,
                       items_note=r.get("items_note"))


class ScheduleStoreLogic:
    """The schedule half of the storage interface; engines provide the primitives."""

    # -- primitives (per engine) ----------------------------------------------------

    def _s_tx(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _s_read(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _s_rows(self, c: Any, query: str, **params: Any) -> list[dict[str, Any]]:
        raise NotImplementedError

    def jobs_insert(self, jobs: list[NewJob], conn: Any = None) -> Any:
        raise NotImplementedError

    def _s_json(self, value: Any) -> str:
        """A JSON text for a batch statement, instants in the engine's own form."""
        raise NotImplementedError

    def _s_instant(self, value: datetime | None) -> Any:
        """An instant as :meth:`_s_json` writes it, for rows built in bulk (encoding each
        through json's fallback took three quarters of a batch's JSON time)."""
        raise NotImplementedError

    def _s_one(self, c: Any, query: str, **params: Any) -> dict[str, Any] | None:
        rows = self._s_rows(c, query, **params)
        return rows[0] if rows else None

    def _s_now(self, c: Any, owner: str | None, term: int | None) -> datetime:
        """The transaction's instant; with a term, only while that leadership holds."""
        if term is None:
            row = self._s_one(c, "schedule_now")
        else:
            row = self._s_one(c, "schedule_leader_check", leader=LEADER_NAME, owner=owner,
                              term=term)
            if row is None:
                raise NotLeader(f"term {term} of {owner} is over; nothing written")
        assert row is not None
        return row["now"]  # type: ignore[no-any-return]

    def _s_recheck(self, c: Any, owner: str | None, term: int | None) -> None:
        """Before commit: is the lease still ours? (A paused leader rolls back here.)"""
        if term is not None and self._s_one(c, "schedule_leader_recheck", leader=LEADER_NAME,
                                            owner=owner, term=term) is None:
            raise NotLeader(f"term {term} of {owner} ended during the transaction; "
                            "rolled back")

    # -- declarations -------------------------------------------------------------------

    def schedules_reconcile(self, defs: list[ScheduleDef],
                            first_fire: Callable[[ScheduleDef, datetime], datetime]
                            ) -> dict[str, str]:
        """Make the stored schedules match the declared ones.

        New ones are inserted with their first fire after now; changed ones are
        updated, keeping their cursor unless the cron or the zone changed; unchanged
        ones are left alone (cursor intact); stored ones no longer declared are marked
        removed (kept, with their history; declaring them again revives them).
        Run-time schedules (origin ``runtime``) are never removed here; a declaration
        in code takes over a run-time row of the same name.
        Returns ``{name: created | changed | unchanged | revived | removed}``.

        One transaction, under the schedules' lock. When the database holds this
        declared set's fingerprint (written by the last reconcile; a trigger deletes it
        on any other write to a definition) everything is unchanged: one row is read and
        nothing written. Otherwise each stored schedule's hash is read and the
        differences are written a batch statement per kind (store/reconcile.py).
        """
        mark = fingerprint(defs)
        with self._s_tx() as c:
            self._s_rows(c, "schedules_lock_all")
            if self._s_one(c, "schedules_reconciled_get", fingerprint=mark) is not None:
                return {d.name: "unchanged" for d in defs}
            now = self._s_now(c, None, None)
            stored = {r["name"]: r for r in self._s_rows(c, "schedules_declared")}
            plan = plan_reconcile(defs, stored)
            for names in chunks(plan.take_over):
                self._s_set_origin(c, names, CODE)
            for part in chunks(plan.create):
                self._s_insert_defs(c, part, first_fire, now)
            for batch in chunks(plan.update):
                self._s_update_defs(c, batch, first_fire, now)
            for names in chunks(plan.remove):
                self._s_mark_removed(c, names)
            self._s_rows(c, "schedules_reconciled_set", fingerprint=mark)
        return plan.report

    # The writes of definitions, each one statement for many (the reconcile's batches) or
    # for one (a run-time schedule added or removed).

    def _s_insert_defs(self, c: Any, defs: list[ScheduleDef],
                       first_fire: Callable[[ScheduleDef, datetime], datetime],
                       now: datetime) -> None:
        t = self._s_instant
        self._s_rows(c, "schedules_insert_batch", rows=self._s_json([
            {**def_params(d), "next_fire_at": t(first_fire(d, now))} for d in defs]))

    def _s_update_defs(self, c: Any, updates: list[tuple[ScheduleDef, bool]],
                       first_fire: Callable[[ScheduleDef, datetime], datetime],
                       now: datetime) -> None:
        """Changed or revived definitions, each with whether its cursor starts afresh."""
        t = self._s_instant
        self._s_rows(c, "schedules_update_definition_batch", rows=self._s_json([
            {**def_params(d), "reset_cursor": reset,
             "next_fire_at": t(first_fire(d, now)) if reset else None}
            for d, reset in updates]))

    def _s_set_origin(self, c: Any, names: list[str], origin: str) -> None:
        self._s_rows(c, "schedules_set_origin_batch", names=self._s_json(names), origin=origin)

    def _s_mark_removed(self, c: Any, names: list[str]) -> None:
        self._s_rows(c, "schedules_mark_removed_batch", names=self._s_json(names))

    def schedules_add(self, defn: ScheduleDef,
                      first_fire: Callable[[ScheduleDef, datetime], datetime],
                      replace: bool = False) -> str:
        """Store ``defn`` as a run-time schedule; returns created | revived | replaced.

        One transaction, under the same lock as the reconcile, so a worker starting at the
        same instant either sees the new row or runs before it is written.
        """
        with self._s_tx() as c:
            self._s_rows(c, "schedules_lock_all")
            now = self._s_now(c, None, None)
            row = self._s_one(c, "schedules_get", name=defn.name)
            if row is None:
                self._s_insert_defs(c, [defn], first_fire, now)
                how = "created"
            else:
                live = row["removed_at"] is None
                if live and row.get("origin", CODE) == CODE:
                    raise ScheduleNameTaken(
                        f"schedule {defn.name!r} is declared in code; pick another name for a "
                        "run-time schedule (code schedules change with the code)")
                if live and not replace:
                    raise ScheduleNameTaken(
                        f"a run-time schedule named {defn.name!r} already exists; remove it first "
                        "or pass replace=True")
                reset = not live or (row["cron"], row["tz"]) != (defn.cron, defn.tz)
                self._s_update_defs(c, [(defn, reset)], first_fire, now)
                how = "replaced" if live else "revived"
            self._s_set_origin(c, [defn.name], RUNTIME)
        return how

    def schedules_remove(self, name: str) -> None:
        """Mark a run-time schedule removed (its history is kept; adding it again revives it)."""
        with self._s_tx() as c:
            self._s_rows(c, "schedules_lock_all")
            row = self._s_one(c, "schedules_get", name=name)
            if row is None or row["removed_at"] is not None:
                raise UnknownScheduleError(f"no run-time schedule named {name!r}")
            if row.get("origin", CODE) != RUNTIME:
                raise ConfigurationError(
                    f"schedule {name!r} is declared in code: remove it from the code (the next "
                    "worker start removes it), or pause it")
            self._s_mark_removed(c, [name])

    # -- the leader's pass ----------------------------------------------------------------

    def schedules_exist(self) -> bool:
        """Whether any schedule was ever stored (an app without any skips the passes)."""
        with self._s_read() as c:
            row = self._s_one(c, "schedules_exist")
        return bool(row and row["any"])

    def schedules_due(self) -> list[str]:
        """Schedules with something to decide: a cursor due, buffered runs to release."""
        return self.schedules_due_as_of()[1]

    def schedules_due_as_of(self) -> tuple[datetime, list[str]]:
        """The database's instant and the schedules with something to decide then,
        earliest cursor first. Reads only those (indexes), whatever the number not due."""
        with self._s_read() as c:
            rows = self._s_rows(c, "schedules_due")
            now = rows[0]["now"] if rows else self._s_now(c, None, None)
        return now, [r["name"] for r in rows]

    def schedules_next_fire_in(self) -> float | None:
        """Seconds from the database's instant to the earliest cursor after it; None when
        no schedule has one (an index's first entry, whatever the number of schedules)."""
        with self._s_read() as c:
            row = self._s_one(c, "schedules_next_fire")
        if row is None or row["next_fire_at"] is None:
            return None
        return float((row["next_fire_at"] - row["now"]).total_seconds())

    def schedules_apply(self, name: str, planner: Planner, owner: str | None = None,
                        term: int | None = None, *, insert: Insert) -> Applied:
        """Read a schedule's snapshot, ask ``planner``, write the plan: one transaction.

        With ``term`` the transaction first checks that this owner still holds that
        leadership (raising :class:`NotLeader` otherwise); without, it is a person's
        action (trigger, backfill) and relies on the keys alone. Jobs are inserted with
        ``insert(jobs, conn)``, the App's insert path.
        """
        with self._s_tx() as c:
            now = self._s_now(c, owner, term)
            row = self._s_one(c, "schedules_lock_one" if term is None
                              else "schedules_try_lock_one", name=name)
            if row is None:
                if term is not None and self._s_one(c, "schedules_get", name=name):
                    return Applied(Plan(), [], now)  # another transaction is deciding it
                raise UnknownScheduleError(f"no schedule named {name!r}")
            [(_, applied)] = self._fire_locked(c, [row], planner, term, now, insert)
            self._s_recheck(c, owner, term)
        return applied

    def schedules_fire(self, names: list[str], planner: Planner, owner: str, term: int, *,
                       insert: Insert) -> list[tuple[str, Applied]]:
        """The leader's batch: many schedules' snapshots, plans and writes in one
        transaction, a few statements in all (not a few per occurrence).

        Schedules another transaction is deciding are skipped (the next pass finds them).
        Exactly-once still rests on the keys: the occurrences' primary key, the jobs'
        unique key. Raises :class:`NotLeader` unless ``(owner, term)`` holds, before and
        at commit. Returns ``(name, Applied)`` for each schedule decided.
        """
        with self._s_tx() as c:
            now = self._s_now(c, owner, term)
            rows = self._s_rows(c, "schedules_try_lock_batch", names=self._s_json(names))
            out = self._fire_locked(c, rows, planner, term, now, insert)
            self._s_recheck(c, owner, term)
        return out

    def _fire_locked(self, c: Any, rows: list[dict[str, Any]], planner: Planner,
                     term: int | None, now: datetime, insert: Insert | None
                     ) -> list[tuple[str, Applied]]:
        """Snapshots, plans and writes for schedule rows locked in this transaction."""
        if not rows:
            return []
        opens: dict[str, list[dict[str, Any]]] = {r["name"]: [] for r in rows}
        for r in self._s_rows(c, "schedule_runs_open_batch", names=self._s_json(list(opens))):
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
        t = self._s_instant
        moves = [{"name": d.name, "cursor": t(p.cursor or cursor), "old_cursor": t(cursor),
                  "clear_override": p.clear_override, "missed_unrecorded": p.missed_unrecorded}
                 for d, p, cursor in decided
                 if p.cursor is not None or p.clear_override or p.missed_unrecorded]
        if moves:
            got = self._s_rows(c, "schedules_advance_batch", rows=self._s_json(moves))
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
        t = self._s_instant
        new_rows: list[dict[str, Any]] = []
        keys: list[tuple[str, datetime]] = []
        new_jobs: list[tuple[int, ScheduleDef, Decision, dict[str, Any]]] = []
        for i, (defn, plan) in enumerate(plans):
            for d in plan.new:
                dms = None
                if defn.expect_success_within is None or d.reason == "paused":
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
            got = self._s_rows(c, "schedule_runs_insert_batch", rows=self._s_json(new_rows),
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
            self._s_rows(c, "schedule_jobs_discard", ids=self._s_json(discard))
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
                done = self._s_one(c, "schedule_runs_release", name=defn.name,
                                   fire_at=d.fire_at, status=d.status.value, reason=d.reason,
                                   run_at=d.run_at, term=term,
                                   finished_at=now if d.status is RunStatus.MISSED else None)
                if done is not None:
                    written[i].append(("released", d))
                    if d.status is RunStatus.ENQUEUED:
                        to_enqueue.append((i, defn, d))
            for d in plan.revive:
                dms = DeadManCheck.NONE.value if defn.expect_success_within is None else None
                done = self._s_one(c, "schedule_runs_revive", name=defn.name, fire_at=d.fire_at,
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
            self._s_rows(c, "schedule_runs_set_job_batch", rows=self._s_json(ids))
        return list(zip(enqueued, written, strict=True))

    def schedule_runs_sync(self, owner: str, term: int
                           ) -> list[tuple[str, datetime, RunStatus, int | None]]:
        """Copy finished jobs' outcomes onto their occurrences; pause-on-failure.

        Returns the occurrences whose status changed.
        """
        out: list[tuple[str, datetime, RunStatus, int | None]] = []
        with self._s_tx() as c:
            self._s_now(c, owner, term)
            for query in ("schedule_runs_sync", "schedule_runs_sync_pruned",
                          "schedule_runs_sync_reopened"):
                for r in self._s_rows(c, query):
                    out.append((r["schedule"], r["fire_at"], RunStatus(r["status"]),
                                r["job_id"]))
            for schedule, fire_at, status, job_id in out:
                if status is RunStatus.FAILED:
                    self._s_rows(c, "schedules_pause_on_failure", name=schedule,
                                 reason=f"paused on failure: the run of {fire_at.isoformat()} "
                                        f"(job {job_id}) failed")
            self._s_recheck(c, owner, term)
        return out

    def schedule_runs_expire(self, owner: str, term: int) -> list[tuple[str, datetime, int]]:
        """Cancel, as missed, jobs not started by fire instant + starting deadline."""
        out: list[tuple[str, datetime, int]] = []
        with self._s_tx() as c:
            self._s_now(c, owner, term)
            for r in self._s_rows(c, "schedule_runs_past_deadline"):
                reason = (f"not started within the starting deadline of "
                          f"{r['starting_deadline']:g}s after its fire instant")
                if self._s_one(c, "schedule_job_cancel_unstarted", job_id=r["job_id"],
                               message=reason) is None:
                    continue  # a worker claimed it meanwhile
                self._s_rows(c, "schedule_runs_mark_missed", name=r["schedule"],
                             fire_at=r["fire_at"], reason=reason)
                out.append((r["schedule"], r["fire_at"], r["job_id"]))
            self._s_recheck(c, owner, term)
        return out

    def schedule_runs_check_late(self, owner: str, term: int) -> list[LateRun]:
        """The dead-man switch: mark each occurrence whose window has passed ok or late.

        Returns the ones found late now: each is returned once, ever (the mark is
        written in this transaction, under the leader check).
        """
        late: list[LateRun] = []
        with self._s_tx() as c:
            self._s_now(c, owner, term)
            for r in self._s_rows(c, "schedule_runs_dms_due"):
                verdict = DeadManCheck.OK if r["ok"] else DeadManCheck.LATE
                if self._s_one(c, "schedule_runs_dms_set", name=r["schedule"],
                               fire_at=r["fire_at"], dms=verdict.value) is None:
                    continue
                if verdict is DeadManCheck.LATE:
                    late.append(LateRun(r["schedule"], r["fire_at"], RunStatus(r["status"]),
                                        r["job_id"], r["expect_success_within"]))
            self._s_recheck(c, owner, term)
        return late

    def schedule_runs_check_items(self, owner: str, term: int,
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
        with self._s_tx() as c:
            self._s_now(c, owner, term)
            for r in self._s_rows(c, "schedule_runs_items_due"):
                figures = RunFigures(r["schedule"], r["fire_at"], r["job_id"], r["items"],
                                     r["duration"])
                verdict, note = judge(figures, r["expect_items"], r["expect_items_rule"])
                if self._s_one(c, "schedule_runs_items_set", name=r["schedule"],
                               fire_at=r["fire_at"], verdict=verdict.value,
                               note=note) is None:
                    continue
                if verdict is ItemsCheck.EMPTY:
                    empty.append(EmptyRun(r["schedule"], r["fire_at"], r["job_id"], r["items"],
                                          r["expect_items"], note))
            self._s_recheck(c, owner, term)
        return empty

    def schedule_runs_prune(self, older_than: float) -> int:
        with self._s_tx() as c:
            return len(self._s_rows(c, "schedule_runs_prune", older_than=older_than))

    # -- people and tools -----------------------------------------------------------------

    def schedules_list(self, include_removed: bool = False) -> list[ScheduleInfo]:
        with self._s_read() as c:
            rows = self._s_rows(c, "schedules_overview")
        out = []
        for r in rows:
            if r["removed_at"] is not None and not include_removed:
                continue
            out.append(ScheduleInfo(
                defn=def_from_row(r), next_fire_at=r["next_fire_at"], paused=bool(r["paused"]),
                paused_reason=r["paused_reason"], removed_at=r["removed_at"],
                created_at=r["created_at"], updated_at=r["updated_at"],
                last_fire_at=r["last_fire_at"], last_success_at=r["last_success_at"],
                last_late_fire_at=r["last_late_fire_at"], not_run=int(r["not_run"]),
                pending=int(r["pending"]), missed_unrecorded=int(r["missed_unrecorded"]),
                now=r["now"], origin=r.get("origin") or CODE,
                last_empty_fire_at=r.get("last_empty_fire_at"),
                last_full_fire_at=r.get("last_full_fire_at"),
                last_empty_note=r.get("last_empty_note")))
        return out

    def schedules_get(self, name: str) -> ScheduleInfo:
        for info in self.schedules_list(include_removed=True):
            if info.name == name:
                return info
        raise UnknownScheduleError(f"no schedule named {name!r}")

    def schedule_runs_list(self, name: str, limit: int = 50) -> list[ScheduleRun]:
        with self._s_read() as c:
            return [run_from_row(r) for r in self._s_rows(c, "schedule_runs_recent", name=name,
                                                          limit=limit)]

    def schedule_runs_history(self, name: str, before: datetime | None = None,
                              limit: int = 50) -> list[ScheduleRunLine]:
        with self._s_read() as c:
            rows = self._s_rows(c, "schedule_runs_history", name=name, limit=limit,
                                before=before)
        return [ScheduleRunLine(run_from_row(r),
                                JobState(r["job_state"]) if r["job_state"] else None,
                                r["job_started_at"], r["job_finished_at"]) for r in rows]

    def schedules_set_paused(self, name: str, paused: bool, reason: str | None = None) -> None:
        with self._s_tx() as c:
            if self._s_one(c, "schedules_set_paused", name=name, paused=paused,
                           reason=reason) is None:
                raise UnknownScheduleError(f"no schedule named {name!r}")

    def schedules_resume(self, name: str, resume: Callable[[ScheduleDef, datetime | None,
                                                             datetime], tuple[Plan, str | None]],
                         ) -> Plan | None:
        """Un-pause. ``resume`` returns the plan for the paused stretch (skipped rows and
        the new cursor) and the catch-up override; returns None if it was not paused."""
        with self._s_tx() as c:
            now = self._s_now(c, None, None)
            row = self._s_one(c, "schedules_lock_one", name=name)
            if row is None:
                raise UnknownScheduleError(f"no schedule named {name!r}")
            if not row["paused"]:
                return None
            defn = def_from_row(row)
            plan, override = resume(defn, row["next_fire_at"], now)
            self._write_plan(c, defn, plan, None, now)
            self._s_rows(c, "schedules_resume", name=name,
                         cursor=plan.cursor or row["next_fire_at"], catchup_override=override)
            return plan

