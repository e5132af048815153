"""The scheduler: the leader's duty of firing due occurrences, plus people's actions.

Every worker runs a :class:`Scheduler` service. At start it reconciles the schedules
declared in code into the database. It registers a leader duty (``app.leader_duties``)
through which the Leader service tells it, every leader tick, the term it holds; while
that term is fresh the scheduler makes a pass every ``interval`` seconds (a schedule may
fire every second, faster than leader ticks). Each pass:

1. copies finished jobs' outcomes onto their occurrences (and pauses a schedule whose
   run failed, if it asked for that);
2. cancels, as missed, jobs not started within their starting deadline;
3. for each schedule with something due, reads a snapshot, asks
   :func:`shiftwork.schedule.plan_tick`, and writes the plan in one transaction that
   first checks the term in the database (a paused or cut-off ex-leader writes nothing);
4. runs the dead-man switch and calls the ``on_schedule_late`` hooks once per late
   occurrence.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError
from ..schedule import (
    Catchup,
    Decision,
    Overlap,
    Plan,
    RunKind,
    RunStatus,
    ScheduleDef,
    ScheduleInfo,
    Snapshot,
    backfill_instants,
    iso_z,
    jitter_offset,
    plan_tick,
    skipped_while_paused,
)
from ..store.schedules import NotLeader, UnknownScheduleError
from .service import Service

if TYPE_CHECKING:
    from ..app import App
    from .maintenance import Leader

log = logging.getLogger("shiftwork.scheduler")

#: Seconds between passes while leader.
PASS_INTERVAL = 0.25
#: Seconds between the bookkeeping steps (sync, deadlines, dead-man switch).
HOUSEKEEPING_INTERVAL = 1.0


def on_time_grace(app: App) -> timedelta:
    """How late the scheduler may reach an occurrence and still call it on time.

    Covers a leader handover (lease expiry plus a leader tick); occurrences found later
    than this were missed during downtime, and the catch-up policy decides.
    """
    return timedelta(seconds=max(2.5 * app.settings.leader_ttl, 2.0))


def reconcile(app: App) -> dict[str, str]:
    """Make the database's schedules match those declared on ``app``."""
    report = app.store.schedules_reconcile(
        list(app.schedules.values()), lambda d, now: d.cron_schedule().next_after(now))
    changed = {k: v for k, v in report.items() if v != "unchanged"}
    if changed:
        log.info("schedules reconciled: %s",
                 ", ".join(f"{k} {v}" for k, v in sorted(changed.items())))
    return report


def run_pass(app: App, owner: str, term: int, housekeeping: bool = True) -> int:
    """One scheduler pass as leader ``(owner, term)``; returns jobs enqueued.

    Raises :class:`NotLeader` when the term is over. Tests call this directly with a
    :class:`~shiftwork.FakeClock` to drive the policies without real time passing.
    """
    store = app.store
    if housekeeping:
        for schedule, fire_at, status, job_id in store.schedule_runs_sync(owner, term):
            if status is RunStatus.FAILED:
                app.events.emit("schedule.run_failed", schedule=schedule,
                                fire_at=iso_z(fire_at), job_id=job_id)
        for schedule, fire_at, job_id in store.schedule_runs_expire(owner, term):
            app.events.emit("schedule.missed", schedule=schedule, fire_at=iso_z(fire_at),
                            job_id=job_id, reason="starting deadline")
    grace = on_time_grace(app)

    def planner(defn: ScheduleDef, snap: Snapshot, now: datetime) -> Plan:
        return plan_tick(defn, defn.cron_schedule(), snap, now, grace)

    count = 0
    for name in store.schedules_due():
        try:
            applied = store.schedules_apply(name, planner, owner, term)
        except NotLeader:
            raise
        except Exception:  # one broken schedule must not starve the others
            log.exception("schedule %s: firing failed; will try again next pass", name)
            continue
        count += len(applied.enqueued)
        _report(app, name, applied.plan, applied.enqueued)
    if housekeeping:
        for late in store.schedule_runs_check_late(owner, term):
            app.events.emit("schedule.late", schedule=late.schedule,
                            fire_at=iso_z(late.fire_at), status=late.status.value,
                            job_id=late.job_id, within=late.expect_success_within)
            for hook in list(app.schedule_late_hooks):
                try:
                    hook(late)
                except Exception:
                    log.exception("on_schedule_late hook failed for %s at %s", late.schedule,
                                  iso_z(late.fire_at))
    return count


def _report(app: App, name: str, plan: Plan, enqueued: list[tuple[datetime, int]]) -> None:
    """After commit: ask superseded runs to stop, and announce what was decided."""
    for job_id in plan.cancel_jobs:
        app.store.jobs_cancel(job_id)
        app.events.emit("schedule.cancel_other", schedule=name, job_id=job_id)
    for fire_at, job_id in enqueued:
        app.events.emit("schedule.fired", schedule=name, fire_at=iso_z(fire_at), job_id=job_id)
    for d in plan.new + plan.released:
        if d.status in (RunStatus.SKIPPED, RunStatus.MISSED):
            app.events.emit(f"schedule.{d.status.value}", schedule=name,
                            fire_at=iso_z(d.fire_at), reason=d.reason)
    for warning in plan.warnings:
        log.warning("%s", warning)
    if plan.missed_unrecorded:
        log.warning("schedule %s: %d more occurrences missed during downtime than are "
                    "recorded one by one", name, plan.missed_unrecorded)


class Scheduler(Service):
    """Fires due occurrences while this worker is the leader."""

    name = "scheduler"

    def __init__(self, app: App, worker_id: str, leader: Leader | None = None,
                 interval: float = PASS_INTERVAL) -> None:
        super().__init__(interval)
        self.app = app
        self.worker_id = worker_id
        self.leader = leader  # this worker's Leader service: duties of others are ignored
        self._term: int | None = None
        self._term_seen = 0.0
        self._last_housekeeping = 0.0
        self._last_prune = time.monotonic()
        self._any = False  # whether the database holds schedules at all

    def start(self) -> None:
        reconcile(self.app)
        self._any = self.app.store.schedules_exist()
        if self.on_leader_tick not in self.app.leader_duties:
            self.app.leader_duties.append(self.on_leader_tick)
        super().start()

    def stop(self, timeout: float = 5.0) -> None:
        if self.on_leader_tick in self.app.leader_duties:
            self.app.leader_duties.remove(self.on_leader_tick)
        super().stop(timeout)

    def on_leader_tick(self, term: int) -> None:
        """The leader duty: the Leader service confirms, every tick, the term it holds."""
        if self.leader is not None and self.leader.term != term:
            return  # another worker's Leader on the same App object (in-process tests)
        self._term = term
        self._term_seen = time.monotonic()

    @property
    def term(self) -> int | None:
        """The term, while recently confirmed (a paused process finds it stale)."""
        if self._term is None:
            return None
        if time.monotonic() - self._term_seen > self.app.settings.leader_ttl * 2 / 3:
            return None
        return self._term

    def tick(self) -> None:
        term = self.term
        if term is None:
            return
        now = time.monotonic()
        housekeeping = now - self._last_housekeeping >= HOUSEKEEPING_INTERVAL
        if housekeeping:
            self._last_housekeeping = now
            # An app without schedules writes nothing; another deploy may add some.
            self._any = self._any or self.app.store.schedules_exist()
        if not self._any:
            return
        try:
            run_pass(self.app, self.worker_id, term, housekeeping)
        except NotLeader:
            log.info("scheduler: term %s is over; standing down", term)
            self._term = None
            return
        if now - self._last_prune >= self.app.settings.prune_interval:
            self._last_prune = now
            self.app.store.schedule_runs_prune(self.app.settings.retention_dead)


# -- people's actions ----------------------------------------------------------------------


def trigger(app: App, name: str) -> int:
    """Run a schedule now (``shiftwork schedules trigger``): one occurrence keyed on the
    database's current instant, enqueued at once whatever the overlap policy or pause."""

    def planner(defn: ScheduleDef, snap: Snapshot, now: datetime) -> Plan:
        return Plan(new=[Decision(now, RunKind.TRIGGER, RunStatus.ENQUEUED, "triggered by hand",
                                  now)])

    applied = app.store.schedules_apply(name, planner)
    _report(app, name, applied.plan, applied.enqueued)
    return applied.enqueued[0][1]


def backfill(app: App, name: str, start: datetime, end: datetime,
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

    applied = app.store.schedules_apply(name, planner)
    counts["new"] = sum(1 for how, _ in applied.written if how == "new")
    counts["rerun"] = sum(1 for how, _ in applied.written if how == "revived")
    counts["already"] = len(applied.plan.new) - counts["new"] - counts["rerun"]
    _report(app, name, applied.plan, applied.enqueued)
    return counts


def pause(app: App, name: str, reason: str = "paused by hand") -> None:
    app.store.schedules_set_paused(name, True, reason)
    app.events.emit("schedule.paused", schedule=name, reason=reason)


def resume(app: App, name: str, catchup: Catchup | str | None = None) -> Plan | None:
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

    out = app.store.schedules_resume(name, plan)
    app.events.emit("schedule.resumed", schedule=name, catchup=policy.value if policy else None)
    return out


def preview(app: App, name: str, n: int = 10, after: datetime | None = None
            ) -> list[datetime]:
    """The next ``n`` fire instants of a stored or declared schedule."""
    defn = app.schedules.get(name)
    if defn is None:
        defn = app.store.schedules_get(name).defn
    cron = defn.cron_schedule()
    t = after or app.store.db_now()
    out: list[datetime] = []
    for f in cron.iter_after(t):
        out.append(f)
        if len(out) >= n:
            break
    return out


def schedules_health(app: App) -> list[str]:
    """Problems with schedules, one sentence each, for the health check (empty: healthy).

    Reports late schedules (dead-man switch), schedules whose next fire is overdue
    (no leader is firing them), and schedules paused after a failure.
    """
    problems: list[str] = []
    try:
        infos = app.store.schedules_list()
    except UnknownScheduleError:  # pragma: no cover - listing never raises it
        return problems
    grace = on_time_grace(app)
    for info in infos:
        problems += _problems(info, grace)
    return problems


class ScheduleObserver:
    """Schedules as ``app.observers`` shows them (metrics, ``shiftwork health``, dashboard).

    Late means: the dead-man switch found an occurrence late and nothing has succeeded
    since, or the schedule is not firing at all (its next fire is overdue).
    """

    def __init__(self, app: App) -> None:
        self.app = app

    def schedules_status(self) -> list[Any]:
        from ..observe.hooks import ScheduleStatus

        grace = on_time_grace(self.app)
        out = []
        for info in self.app.store.schedules_list():
            why = lateness(info, grace)
            out.append(ScheduleStatus(
                name=info.name, next_fire_at=info.next_fire_at,
                last_success_at=info.last_success_at, late=why is not None,
                reason=why or "", cron=f"{info.defn.cron} ({info.defn.tz})",
                task=info.defn.task, paused=info.paused))
        return out

    def schedule_trigger(self, name: str) -> int:
        return trigger(self.app, name)

    @staticmethod
    def paused_on_failure(app: App) -> list[Any]:
        """A health check: schedules that paused themselves after a failed run."""
        from ..observe.health import Problem

        return [Problem("schedule_paused", i.name, f"schedule {i.name} is {i.paused_reason}")
                for i in app.store.schedules_list()
                if i.paused and (i.paused_reason or "").startswith("paused on failure")]


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


def _problems(info: ScheduleInfo, grace: timedelta) -> list[str]:
    out: list[str] = []
    why = lateness(info, grace)
    if why is not None:
        out.append(f"schedule {info.name} is late: {why}")
    if info.paused and info.paused_reason and info.paused_reason.startswith("paused on failure"):
        out.append(f"schedule {info.name} is {info.paused_reason}")
    return out
