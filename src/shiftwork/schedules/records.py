"""The schedule records built above the store: a stored schedule with its definition
(``ScheduleInfo``) and what a firing transaction wrote (``Applied``). The store returns
rows; schedules/rows.py turns them into these."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from shiftwork.schedules.definition import Decision, Plan, ScheduleDef


@dataclass(frozen=True)
class ScheduleInfo:
    """A stored schedule with its state, for people and tools."""

    defn: ScheduleDef
    next_fire_at: datetime | None
    paused: bool
    paused_reason: str | None
    removed_at: datetime | None
    created_at: datetime
    updated_at: datetime
    last_fire_at: datetime | None  # newest occurrence that got a job
    last_success_at: datetime | None  # when a run of it last succeeded
    last_late_fire_at: datetime | None  # newest occurrence the dead-man switch found late
    not_run: int  # occurrences recorded as missed or skipped
    pending: int  # occurrences buffered by the overlap policy or a backfill
    missed_unrecorded: int  # missed during a very long outage, counted but not recorded
    now: datetime  # the database's clock when this was read
    origin: str = "code"  # 'code' (reconciled from code) or 'runtime' (app.schedules.add)
    last_empty_fire_at: datetime | None = None  # newest run the items check found empty
    last_full_fire_at: datetime | None = None  # newest run that met its expect_items
    last_empty_note: str | None = None  # why the newest empty run was (counts, or an error)

    @property
    def name(self) -> str:
        return self.defn.name

    def empty(self) -> bool:
        """The items check: the newest judged run succeeded with fewer items than the
        schedule expects (``expect_items=``), until a later run meets it again."""
        if self.removed_at is not None or self.last_empty_fire_at is None:
            return False
        return self.last_full_fire_at is None or self.last_full_fire_at < self.last_empty_fire_at

    def late(self, now: datetime | None = None) -> bool:
        """The dead-man switch: no success within ``expect_success_within`` of a fire.

        Late when the newest occurrence found late has had no success since, or when
        the cursor itself is overdue by more than that time (nothing is firing at all).
        """
        w = self.defn.expect_success_within
        if w is None or self.removed_at is not None:
            return False
        now = now or self.now
        if self.last_late_fire_at is not None and (
                self.last_success_at is None or self.last_success_at < self.last_late_fire_at):
            return True
        return (not self.paused and self.next_fire_at is not None
                and self.next_fire_at + timedelta(seconds=w) <= now)



@dataclass(frozen=True)
class Applied:
    """What one firing transaction wrote."""

    plan: Plan
    enqueued: list[tuple[datetime, int]]  # (fire instant, job id)
    now: datetime
    written: list[tuple[str, Decision]] = field(default_factory=list)  # new|released|revived
