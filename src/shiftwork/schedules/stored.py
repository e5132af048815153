"""The stored schedules, one object per store: the firing transactions
(schedules/firing.py), the writes of definitions (schedules/reconcile.py) and the reads
for people and tools, all on the store's schedule statements (``store.schedules``).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from shiftwork.core.states import JobState
from shiftwork.model.records import ScheduleRun, ScheduleRunLine
from shiftwork.schedules.errors import UnknownScheduleError
from shiftwork.schedules.firing import Firing, now_of
from shiftwork.schedules.origin import CODE
from shiftwork.schedules.reconcile import Declarations
from shiftwork.schedules.records import ScheduleInfo
from shiftwork.schedules.rows import def_from_row, run_from_row
from shiftwork.store.base import ScheduleStatements

if TYPE_CHECKING:
    from shiftwork.store.base import Store


class StoredSchedules(Firing, Declarations):
    """What is done with stored schedules; ``schedules_of(store)`` gives a store's."""

    def __init__(self, sql: ScheduleStatements) -> None:
        self.sql = sql

    def exist(self) -> bool:
        """Whether any schedule was ever stored (an app without any skips the passes)."""
        with self.sql.read() as c:
            row = self.sql.one(c, "schedules_exist")
        return bool(row and row["any"])

    def due(self) -> list[str]:
        """Schedules with something to decide: a cursor due, buffered runs to release."""
        return self.due_as_of()[1]

    def due_as_of(self) -> tuple[datetime, list[str]]:
        """The database's instant and the schedules with something to decide then,
        earliest cursor first. Reads only those (indexes), whatever the number not due."""
        with self.sql.read() as c:
            rows = self.sql.rows(c, "schedules_due")
            now = rows[0]["now"] if rows else now_of(self.sql, c, None, None)
        return now, [r["name"] for r in rows]

    def next_fire_in(self) -> float | None:
        """Seconds from the database's instant to the earliest cursor after it; None when
        no schedule has one (an index's first entry, whatever the number of schedules)."""
        with self.sql.read() as c:
            row = self.sql.one(c, "schedules_next_fire")
        if row is None or row["next_fire_at"] is None:
            return None
        return float((row["next_fire_at"] - row["now"]).total_seconds())

    def overview(self, include_removed: bool = False) -> list[ScheduleInfo]:
        with self.sql.read() as c:
            rows = self.sql.rows(c, "schedules_overview")
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

    def get(self, name: str) -> ScheduleInfo:
        for info in self.overview(include_removed=True):
            if info.name == name:
                return info
        raise UnknownScheduleError(f"no schedule named {name!r}")

    def runs_list(self, name: str, limit: int = 50) -> list[ScheduleRun]:
        with self.sql.read() as c:
            return [run_from_row(r) for r in self.sql.rows(c, "schedule_runs_recent", name=name,
                                                          limit=limit)]

    def runs_history(self, name: str, before: datetime | None = None,
                              limit: int = 50) -> list[ScheduleRunLine]:
        with self.sql.read() as c:
            rows = self.sql.rows(c, "schedule_runs_history", name=name, limit=limit,
                                before=before)
        return [ScheduleRunLine(run_from_row(r),
                                JobState(r["job_state"]) if r["job_state"] else None,
                                r["job_started_at"], r["job_finished_at"]) for r in rows]

    def set_paused(self, name: str, paused: bool, reason: str | None = None) -> None:
        with self.sql.tx() as c:
            if self.sql.one(c, "schedules_set_paused", name=name, paused=paused,
                           reason=reason) is None:
                raise UnknownScheduleError(f"no schedule named {name!r}")


def schedules_of(store: Store) -> StoredSchedules:
    """The stored schedules of ``store`` (nothing but its statements: cheap to make)."""
    return StoredSchedules(store.schedules)
