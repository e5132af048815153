"""A schedule's life as people act on it: ``app.schedules``, the declared schedules with
the actions taken on them (pause, resume, trigger, backfill, preview), and how they look
to metrics, health checks and the dashboard.

The worker's :class:`~shiftwork.schedules.scheduler.Scheduler` service fires schedules;
everything a person or a tool does to one lives here, on the App.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from shiftwork.core.errors import ConfigurationError
from shiftwork.core.settings import Settings
from shiftwork.jobs.enqueue import insert_rows
from shiftwork.model.schedule_values import Catchup, Overlap, RunKind, RunStatus
from shiftwork.model.visibility import Problem, ScheduleStatus
from shiftwork.schedules.definition import (
    Decision,
    Plan,
    ScheduleDef,
    Snapshot,
    backfill_instants,
    iso_z,
    jitter_offset,
    skipped_while_paused,
)
from shiftwork.schedules.records import ScheduleInfo
from shiftwork.schedules.stored import schedules_of

if TYPE_CHECKING:
    from shiftwork.jobs.task import JobRequest
    from shiftwork.runtime import Runtime

log = logging.getLogger("shiftwork.scheduler")


def on_time_grace(settings: Settings) -> timedelta:
    """How late the scheduler may reach an occurrence and still call it on time.

    Covers a leader handover (lease expiry plus a leader tick); occurrences found later
    than this were missed during downtime, and the catch-up policy decides.
    """
    return timedelta(seconds=max(2.5 * settings.leader_ttl, 2.0))


class ScheduleBook(dict[str, ScheduleDef]):
    """``app.schedules``: the schedules declared in code (name -> definition), and the
    actions people take on any stored schedule, by name.

    It is also the App's schedules source for visibility (``schedules_status``,
    ``schedule_trigger``), and :meth:`paused_on_failure` is one of its health checks.
    """

    def __init__(self, rt: Runtime) -> None:
        super().__init__()
        self._rt = rt

    # -- run-time schedules (stored with origin 'runtime'; reconcile leaves them) ----------

    def add(self, name: str, cron: str, call: JobRequest | str,
            args: tuple[Any, ...] | list[Any] = (), kwargs: dict[str, Any] | None = None, *,
            replace: bool = False, queue: str | None = None, priority: int | None = None,
            **policy: Any) -> ScheduleDef:
        """Add a schedule at run time: ``app.schedules.add("report-acme", "0 6 * * MON",
        report.call("acme"), tz="Europe/Paris")``.

        ``policy`` takes what :meth:`App.schedule` takes (``tz``, ``catchup``, ``overlap``,
        ``jitter``...). It is stored at once and survives worker starts; the leader picks it
        up on its next pass. A name declared in code is refused; an existing run-time one
        too, unless ``replace``.
        """
        from shiftwork.schedules.runtime import runtime_def

        defn = runtime_def(self._rt.registry, self, name, cron, call, args, kwargs,
                           queue=queue, priority=priority, **policy)
        how = schedules_of(self._rt.store).add(
            defn, lambda d, now: d.cron_schedule().next_after(now), replace=replace)
        self._rt.events.emit("schedule.added", schedule=name, how=how)
        return defn

    def remove(self, name: str) -> None:
        """Remove a run-time schedule (its history stays; code schedules are refused)."""
        schedules_of(self._rt.store).remove(name)
        self._rt.events.emit("schedule.removed", schedule=name)

    def trigger(self, name: str) -> int:
        """Run a schedule now (``shiftwork schedules trigger``): one occurrence keyed on the
        database's current instant, enqueued at once whatever the overlap policy or pause."""

        def planner(defn: ScheduleDef, snap: Snapshot, now: datetime) -> Plan:
            return Plan(new=[Decision(now, RunKind.TRIGGER, RunStatus.ENQUEUED, "triggered by hand",
                                      now)])

        applied = schedules_of(self._rt.store).apply(name, planner,
                                                 insert=partial(insert_rows, self._rt))
        report(self._rt, name, applied.plan, applied.enqueued)
        return applied.enqueued[0][1]


    def backfill(self, name: str, start: datetime, end: datetime,
                 overlap: Overlap | str = Overlap.BUFFER_ALL) -> dict[str, int]:
        """Run the occurrences in [start, end] that never ran, under the same keys.

        An occurrence already recorded as enqueued, succeeded, failed or cancelled is left
        alone (never duplicated); one recorded as missed or skipped is run now. With
        ``buffer_all`` (the default) they run one at a time, oldest first, whenever no run of
        the schedule is active; with ``allow_all`` they are all enqueued at once.
        """
        ov = Overlap(overlap)
        if ov not in (Overlap.BUFFER_ALL, Overlap.ALLOW_ALL):
            raise ConfigurationError(f"backfill overlap must be buffer_all or allow_all, not {ov}")
        for t, what in ((start, "--from"), (end, "--to")):
            if t.tzinfo is None:
                raise ConfigurationError(f"backfill {what} must carry a time zone (e.g. ...Z)")
        counts = {"new": 0, "rerun": 0, "already": 0}

        def planner(defn: ScheduleDef, snap: Snapshot, now: datetime) -> Plan:
            plan = Plan()
            instants = backfill_instants(defn.cron_schedule(), start, end)
            for f in instants:
                if f > now:
                    break
                status = RunStatus.ENQUEUED if ov is Overlap.ALLOW_ALL else RunStatus.PENDING
                run_at = f + jitter_offset(defn.name, f, defn.jitter)
                d = Decision(f, RunKind.BACKFILL, status, f"backfill (overlap={ov.value})",
                             max(run_at, now))
                plan.new.append(d)
                plan.revive.append(d)
            return plan

        applied = schedules_of(self._rt.store).apply(name, planner,
                                                 insert=partial(insert_rows, self._rt))
        counts["new"] = sum(1 for how, _ in applied.written if how == "new")
        counts["rerun"] = sum(1 for how, _ in applied.written if how == "revived")
        counts["already"] = len(applied.plan.new) - counts["new"] - counts["rerun"]
        report(self._rt, name, applied.plan, applied.enqueued)
        return counts


    def pause(self, name: str, reason: str = "paused by hand") -> None:
        """Stop firing ``name`` until :meth:`resume` (occurrences meanwhile are skipped)."""
        schedules_of(self._rt.store).set_paused(name, True, reason)
        self._rt.events.emit("schedule.paused", schedule=name, reason=reason)


    def resume(self, name: str, catchup: Catchup | str | None = None) -> Plan | None:
        """Un-pause. Without ``catchup`` the occurrences that came due while paused are
        recorded as skipped and the schedule continues from now; with it, the next pass
        applies that catch-up policy to them."""
        policy = Catchup(catchup) if catchup is not None else None

        def plan(defn: ScheduleDef, cursor: datetime | None, now: datetime
                 ) -> tuple[Plan, str | None]:
            cron = defn.cron_schedule()
            if cursor is None:
                return Plan(cursor=cron.next_after(now)), None
            if policy is not None:
                return Plan(), policy.value
            kept, count, nxt = skipped_while_paused(cron, cursor, now)
            p = Plan(cursor=nxt, missed_unrecorded=count - len(kept))
            p.new = [Decision(f, RunKind.CRON, RunStatus.SKIPPED, "paused") for f in kept]
            return p, None

        out = schedules_of(self._rt.store).resume(name, plan)
        self._rt.events.emit("schedule.resumed", schedule=name,
                               catchup=policy.value if policy else None)
        return out


    def preview(self, name: str, n: int = 10, after: datetime | None = None
                ) -> list[datetime]:
        """The next ``n`` fire instants of a stored or declared schedule."""
        defn = self.get(name)
        if defn is None:
            defn = schedules_of(self._rt.store).get(name).defn
        cron = defn.cron_schedule()
        t = after or self._rt.store.db_now()
        out: list[datetime] = []
        for f in cron.iter_after(t):
            out.append(f)
            if len(out) >= n:
                break
        return out


    def health(self) -> list[str]:
        """Problems with schedules, one sentence each, for the health check (empty: healthy).

        Reports late schedules (dead-man switch), schedules whose next fire is overdue
        (no leader is firing them), and schedules paused after a failure.
        """
        problems: list[str] = []
        infos = schedules_of(self._rt.store).overview()
        grace = on_time_grace(self._rt.settings)
        for info in infos:
            problems += _problems(info, grace)
        return problems

    # -- visibility -------------------------------------------------------------------

    def schedules_status(self) -> list[ScheduleStatus]:
        """Schedules as metrics, ``shiftwork health`` and the dashboard show them.

        Late means: the dead-man switch found an occurrence late and nothing has
        succeeded since, or the schedule is not firing at all (its next fire is overdue).
        """
        grace = on_time_grace(self._rt.settings)
        out = []
        for info in schedules_of(self._rt.store).overview():
            why = lateness(info, grace)
            empty = info.empty()
            out.append(ScheduleStatus(
                name=info.name, next_fire_at=info.next_fire_at,
                last_success_at=info.last_success_at, late=why is not None,
                reason=why or "", cron=f"{info.defn.cron} ({info.defn.tz})",
                task=info.defn.task, paused=info.paused, origin=info.origin, empty=empty,
                empty_reason=emptiness(info) if empty else ""))
        return out

    def schedule_trigger(self, name: str) -> int:
        return self.trigger(name)

    def paused_on_failure(self, app: object = None) -> list[Problem]:
        """A health check: schedules that paused themselves after a failed run (``app``:
        what every health check is given; this one reads its own store)."""
        return [Problem("schedule_paused", i.name, f"schedule {i.name} is {i.paused_reason}")
                for i in schedules_of(self._rt.store).overview()
                if i.paused and (i.paused_reason or "").startswith("paused on failure")]


def report(rt: Runtime, name: str, plan: Plan, enqueued: list[tuple[datetime, int]]) -> None:
    """After commit: ask superseded runs to stop, and announce what was decided."""
    for job_id in plan.cancel_jobs:
        rt.store.jobs.cancel(job_id)
        rt.events.emit("schedule.cancel_other", schedule=name, job_id=job_id)
    for fire_at, job_id in enqueued:
        rt.events.emit("schedule.fired", schedule=name, fire_at=iso_z(fire_at), job_id=job_id)
    for d in plan.new + plan.released:
        if d.status in (RunStatus.SKIPPED, RunStatus.MISSED):
            rt.events.emit(f"schedule.{d.status.value}", schedule=name,
                            fire_at=iso_z(d.fire_at), reason=d.reason)
    for warning in plan.warnings:
        log.warning("%s", warning)
    if plan.missed_unrecorded:
        log.warning("schedule %s: %d more occurrences missed during downtime than are "
                    "recorded one by one", name, plan.missed_unrecorded)


def lateness(info: ScheduleInfo, grace: timedelta) -> str | None:
    """Why a schedule is late, in words, or None when it is not."""
    now = info.now
    if info.late(now):
        since = info.last_late_fire_at or info.next_fire_at
        return (f"no success within {info.defn.expect_success_within:g}s of its fire at "
                f"{iso_z(since) if since else '?'}")
    if (not info.paused and info.removed_at is None and info.next_fire_at is not None
            and now - info.next_fire_at > 2 * grace):
        return (f"not firing: its fire at {iso_z(info.next_fire_at)} is "
                f"{(now - info.next_fire_at).total_seconds():.0f}s overdue; "
                "is any worker running?")
    return None


def emptiness(info: ScheduleInfo) -> str:
    """Why a schedule counts as empty, in words (its newest empty run and what it did)."""
    at = iso_z(info.last_empty_fire_at) if info.last_empty_fire_at else "?"
    return f"its run of {at} {info.last_empty_note or 'processed too few items'}"


def _problems(info: ScheduleInfo, grace: timedelta) -> list[str]:
    out: list[str] = []
    why = lateness(info, grace)
    if why is not None:
        out.append(f"schedule {info.name} is late: {why}")
    if info.empty():
        out.append(f"schedule {info.name} is empty: {emptiness(info)}")
    if info.paused and info.paused_reason and info.paused_reason.startswith("paused on failure"):
        out.append(f"schedule {info.name} is {info.paused_reason}")
    return out
