"""The scheduler service: the leader's duty of firing due occurrences.

People's actions on schedules (pause, resume, trigger, backfill, preview) and how
schedules look to visibility tools live on the App: :mod:`shiftwork.schedules.book`.

Every worker runs a :class:`ScheduleReconciler` at its start, which writes the schedules
declared in code into the database. The :class:`Scheduler` is a leader-only service: the
leader's maintainer (worker/maintenance/) starts it when this worker is elected and stops
it when the lease is lost; while the leader's term is fresh it makes a pass every
``interval`` seconds (a schedule may fire every second, faster than leader ticks). Each
pass:

1. copies finished jobs' outcomes onto their occurrences (and pauses a schedule whose
   run failed, if it asked for that);
2. cancels, as missed, jobs not started within their starting deadline;
3. reads the schedules with something due (only those: an index on the cursor), and for
   up to ``FIRE_BATCH`` of them at a time reads their snapshots, asks
   :func:`shiftwork.schedules.definition.plan_tick` as of the pass's start, and writes the plans
   (occurrences, jobs, cursors) in one transaction that first checks the term in the
   database (a paused or cut-off ex-leader writes nothing);
4. judges succeeded runs against ``expect_items`` and calls the ``on_schedule_empty``
   hooks once per empty occurrence; runs the dead-man switch and calls the
   ``on_schedule_late`` hooks once per late occurrence.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from shiftwork.core.errors import StorageError
from shiftwork.core.service import LeaderTerm, Service
from shiftwork.jobs.enqueue import insert_rows
from shiftwork.model.items import ItemsCheck, RunFigures, judge_items
from shiftwork.model.records import EmptyRun, LateRun
from shiftwork.model.schedule_values import RunStatus
from shiftwork.schedules.book import on_time_grace, report
from shiftwork.schedules.definition import Plan, ScheduleDef, Snapshot, iso_z, plan_tick
from shiftwork.schedules.errors import NotLeader
from shiftwork.schedules.firing import Planner
from shiftwork.schedules.records import Applied
from shiftwork.schedules.stored import schedules_of

if TYPE_CHECKING:
    from shiftwork.runtime import Runtime

log = logging.getLogger("shiftwork.scheduler")

#: Seconds between passes while leader.
PASS_INTERVAL = 0.25
#: Schedules decided per firing transaction: their occurrences, jobs and cursors are
#: written in a few statements, one commit.
FIRE_BATCH = 1000
#: Firing transactions at once on Postgres when a pass has several batches (at most the
#: pool's size less one): while one waits for the server, another plans in Python.
FIRE_THREADS = 3
#: Seconds after a cursor's instant that the leader wakes for it (clock granularity).
WAKE_MARGIN = 0.002
#: Seconds between the bookkeeping steps (sync, deadlines, dead-man switch).
HOUSEKEEPING_INTERVAL = 1.0


def reconcile(rt: Runtime) -> dict[str, str]:
    """Make the database's schedules match those declared on ``app``."""
    report = schedules_of(rt.store).reconcile(
        list(rt.registry.schedules.values()), lambda d, now: d.cron_schedule().next_after(now))
    changed = {k: v for k, v in report.items() if v != "unchanged"}
    if changed:
        log.info("schedules reconciled: %s",
                 ", ".join(f"{k} {v}" for k, v in sorted(changed.items())))
    return report


def _one_by_one(rt: Runtime, names: list[str], planner: Planner, owner: str, term: int
                ) -> list[tuple[str, Applied]]:
    out = []
    for name in names:
        try:
            out.append((name, schedules_of(rt.store).apply(name, planner, owner, term,
                                                        insert=partial(insert_rows, rt))))
        except (NotLeader, StorageError):  # the database, not this schedule: the pass ends
            raise
        except Exception:
            log.exception("schedule %s: firing failed; will try again next pass", name)
    return out


def run_pass(rt: Runtime, owner: str, term: int, housekeeping: bool = True) -> int:
    """One scheduler pass as leader ``(owner, term)``; returns jobs enqueued.

    Raises :class:`NotLeader` when the term is over. Tests call this directly with a
    :class:`~shiftwork.FakeClock` to drive the policies without real time passing.
    """
    store = rt.store
    if housekeeping:
        for schedule, fire_at, status, job_id in schedules_of(store).runs_sync(owner, term):
            if status is RunStatus.FAILED:
                rt.events.emit("schedule.run_failed", schedule=schedule,
                                fire_at=iso_z(fire_at), job_id=job_id)
        for schedule, fire_at, job_id in schedules_of(store).runs_expire(owner, term):
            rt.events.emit("schedule.missed", schedule=schedule, fire_at=iso_z(fire_at),
                            job_id=job_id, reason="starting deadline")
    grace = on_time_grace(rt.settings)
    # Every occurrence this pass takes is judged as of the pass's start: when a live
    # leader took it. A burst that takes seconds to write is not late by its own work
    # (on-time vs caught-up, starting deadline: docs/scheduling.md).
    as_of, names = schedules_of(store).due_as_of()

    def planner(defn: ScheduleDef, snap: Snapshot, now: datetime) -> Plan:
        return plan_tick(defn, defn.cron_schedule(), snap, min(now, as_of), grace)

    def fire(batch: list[str]) -> list[tuple[str, Applied]]:
        try:
            return schedules_of(store).fire(batch, planner, owner, term,
                                        insert=partial(insert_rows, rt))
        except (NotLeader, StorageError):  # the database, not a schedule: the pass ends
            raise
        except Exception:  # one broken schedule must not starve the others: one by one
            log.exception("schedules: a batch of %d failed; firing them one by one", len(batch))
            return _one_by_one(rt, batch, planner, owner, term)

    def announce(fired: list[tuple[str, Applied]]) -> int:
        for name, applied in fired:
            report(rt, name, applied.plan, applied.enqueued)
        return sum(len(applied.enqueued) for _, applied in fired)

    batches = [names[i:i + FIRE_BATCH] for i in range(0, len(names), FIRE_BATCH)]
    count = 0
    threads = 1
    if len(batches) > 1 and store.engine == "postgres":
        # One of the pool's connections stays free for the worker's claims and heartbeats.
        pool_size: int = store.connections.pool_size  # type: ignore[attr-defined]
        threads = min(FIRE_THREADS, len(batches), pool_size - 1)
    if threads > 1:
        # Transactions at once: one batch's statements run in Postgres while the next
        # batch is planned in Python (SQLite has one writer: no gain there). Each batch
        # is announced as soon as it has committed.
        with ThreadPoolExecutor(threads, thread_name_prefix="shiftwork-fire") as pool:
            for fired in pool.map(fire, batches):
                count += announce(fired)
    else:
        for batch in batches:
            count += announce(fire(batch))
    if housekeeping:
        check_items(rt, owner, term)
        for late in schedules_of(store).runs_check_late(owner, term):
            rt.events.emit("schedule.late", schedule=late.schedule,
                            fire_at=iso_z(late.fire_at), status=late.status.value,
                            job_id=late.job_id, within=late.expect_success_within)
            _call_hooks(rt.registry.schedule_late_hooks, late, "on_schedule_late")
    return count


def _call_hooks(hooks: list[Callable[[Any], None]], run: LateRun | EmptyRun, what: str) -> None:
    """Hand an occurrence found late or empty to each user hook; one failing hook is
    logged and does not keep the others from hearing of it."""
    for hook in list(hooks):
        try:
            hook(run)
        except Exception:
            log.exception("%s hook failed for %s at %s", what, run.schedule, iso_z(run.fire_at))


def check_items(rt: Runtime, owner: str, term: int) -> None:
    """The items check: judge succeeded runs against their schedule's ``expect_items``,
    then announce each empty one once (marked in the database first, as a late one)."""
    def judge(figures: RunFigures, expect_items: int | None, rule_name: str | None
              ) -> tuple[ItemsCheck, str]:
        declared = rt.registry.schedules.get(figures.schedule)
        rule = declared.items_rule if declared is not None else None
        return judge_items(figures, expect_items, rule_name, rule)

    for empty in schedules_of(rt.store).runs_check_items(owner, term, judge):
        rt.events.emit("schedule.empty", schedule=empty.schedule,
                        fire_at=iso_z(empty.fire_at), job_id=empty.job_id, items=empty.items,
                        expect_items=empty.expect_items, reason=empty.reason)
        _call_hooks(rt.registry.schedule_empty_hooks, empty, "on_schedule_empty")


class ScheduleReconciler(Service):
    """Every worker, at its start: make the database's schedules match those declared
    in code. Retried every ``interval`` while the database is away; :attr:`done` is set
    once it has succeeded (the leader's passes wait for it)."""

    name = "schedule-reconciler"

    def __init__(self, rt: Runtime, interval: float = 1.0) -> None:
        super().__init__(interval)
        self.rt = rt
        self.done = threading.Event()

    def start(self) -> None:
        try:  # at once: a worker that starts with its database has reconciled by now
            self.tick()
        except StorageError as exc:  # the database is restarting: retried on the thread
            log.warning("scheduler: could not reconcile schedules yet (%s); will retry", exc)
        super().start()

    def tick(self) -> None:
        if not self.done.is_set():
            reconcile(self.rt)
            self.done.set()
        self.request_stop()  # done: the thread ends


class Scheduler(Service):
    """The leader-only service that fires due occurrences (started on election)."""

    name = "scheduler"

    def __init__(self, rt: Runtime, worker_id: str, leader: LeaderTerm,
                 reconciled: threading.Event | None = None,
                 interval: float = PASS_INTERVAL) -> None:
        super().__init__(interval)
        self.rt = rt
        self.worker_id = worker_id
        self.leader = leader
        self.reconciled = reconciled
        self._last_housekeeping: float | None = None  # None: housekeep on the first pass
        self._any = False  # whether the database holds schedules at all

    def tick(self) -> None:
        if self.reconciled is not None and not self.reconciled.is_set():
            return  # the declared schedules are not in the database yet
        term = self.leader.term
        if term is None:
            return  # stale: the maintainer stops this service if the lease is lost
        now = self.rt.clock.monotonic()
        housekeeping = (self._last_housekeeping is None
                        or now - self._last_housekeeping >= HOUSEKEEPING_INTERVAL)
        if housekeeping:
            self._last_housekeeping = now
            # An app without schedules writes nothing; another deploy may add some.
            self._any = self._any or schedules_of(self.rt.store).exist()
        if not self._any:
            return
        try:
            run_pass(self.rt, self.worker_id, term, housekeeping)
        except NotLeader:
            log.info("scheduler: term %s is over; waiting for the leader", term)
            return
        # A cursor coming due before the next pass: wake at its instant (a burst of
        # schedules due at a cron boundary starts then, not up to an interval later).
        # (the query's own length, off a real wait: time.monotonic, as the wait is real)
        asked = time.monotonic()
        soon = schedules_of(self.rt.store).next_fire_in()
        if soon is not None and 0 < soon < self.interval:
            self.next_wait = soon + WAKE_MARGIN - (time.monotonic() - asked)
