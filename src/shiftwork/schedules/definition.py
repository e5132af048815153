"""Schedules: what a declared schedule is, and what to do when its occurrences come due.

Everything here is pure: functions take the instant they reason about (the database's
``now``) as an argument and return a decision; the scheduler (``worker/scheduler.py``)
reads a snapshot, asks :func:`plan_tick`, and writes the plan in one transaction.

Words used throughout:

* **fire instant** — a UTC instant the cron expression yields (policy ``shiftwork-dst-v1``);
* **occurrence** — one fire instant of one schedule, recorded once in ``schedule_runs``
  with primary key (schedule, fire instant); its job has unique key
  ``schedule:<name>:<fire instant>``;
* **cursor** — the schedule's next fire instant not yet decided on;
* **active** — an occurrence whose job is waiting or running;
* **pending** — an occurrence buffered by the overlap policy (or a backfill), waiting for
  the active one to finish.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from json.encoder import encode_basestring_ascii
from typing import Any, Literal

from shiftwork.core.bounds import seconds as check_seconds
from shiftwork.core.errors import ConfigurationError
from shiftwork.core.names import check_queue, check_schedule_name
from shiftwork.model.items import ItemsExpectation, RunFigures, items_expectation
from shiftwork.model.new_job import NewJob
from shiftwork.model.schedule_values import Catchup, Overlap, RunKind, RunStatus
from shiftwork.schedules.cron import CronError
from shiftwork.schedules.interval import Timetable, timetable

#: What ``catchup=`` accepts: the enum or its value.
CatchupPolicy = Catchup | Literal["skip", "latest", "all"]
#: What ``overlap=`` accepts: the enum or its value.
OverlapPolicy = Overlap | Literal["skip", "buffer_one", "buffer_all", "cancel_other",
                                  "terminate_other", "allow_all"]
#: A length of time: seconds, or a timedelta.
Duration = float | timedelta


DEFAULT_CATCHUP_CAP = 100
#: Occurrences missed during downtime are recorded one row each up to this many (newest
#: kept); beyond it the count is logged and added to the schedule's ``missed_unrecorded``.
MISSED_RECORD_CAP = 1000
#: Counting missed occurrences stops here; the cursor then jumps past the gap.
MISSED_COUNT_CAP = 100_000


def seconds(value: float | int | timedelta | None, what: str, *, allow_zero: bool = False
            ) -> float | None:
    """A duration given as seconds or a timedelta, checked to be positive (bounds.py)."""
    return None if value is None else check_seconds(value, what, allow_zero=allow_zero)


def _choice(enum: type[StrEnum], value: Any, what: str) -> Any:
    try:
        return enum(value)
    except ValueError:
        allowed = " | ".join(m.value for m in enum)
        raise ConfigurationError(f"{what} {value!r} is not one of {allowed}") from None


@dataclass(frozen=True)
class ScheduleDef:
    """A declared schedule, as stored in the ``schedules`` table.

    The job it enqueues is described by value (task name, encoded arguments, queue...)
    so the leader can fire it without importing the code that declared it.
    """

    name: str
    cron: str
    tz: str
    task: str
    args_json: str
    queue: str
    priority: int = 0
    max_attempts: int = 20
    timeout: float | None = None
    catchup: Catchup = Catchup.LATEST
    catchup_window: float | None = None  # seconds; None: one period (latest) / unbounded (all)
    catchup_cap: int = DEFAULT_CATCHUP_CAP
    overlap: Overlap = Overlap.SKIP
    starting_deadline: float | None = None  # seconds after the fire instant
    jitter: float = 0.0  # seconds; offsets in [0, jitter)
    expect_success_within: float | None = None  # seconds after each fire (dead-man switch)
    pause_on_failure: bool = False
    expect_items: int | None = None  # items each succeeded run must report, at least
    expect_items_rule: str | None = None  # or the name of a rule judging each run's figures
    #: the rule itself (``expect_items=callable``): code's, never stored; the leader's code
    #: declares it, so the leader judges by it
    items_rule: Callable[[RunFigures], bool] | None = field(default=None, compare=False,
                                                            repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or len(self.name) > 200 \
                or any(c.isspace() for c in self.name):
            raise ConfigurationError(f"bad schedule name {self.name!r}: use 1-200 characters "
                                     "without spaces")
        check_queue(self.queue)
        object.__setattr__(self, "catchup", _choice(Catchup, self.catchup,
                                                    f"schedule {self.name}: catchup"))
        object.__setattr__(self, "overlap", _choice(Overlap, self.overlap,
                                                    f"schedule {self.name}: overlap"))
        if not isinstance(self.catchup_cap, int) or self.catchup_cap < 1:
            raise ConfigurationError(f"schedule {self.name}: catchup_cap must be an integer >= 1")
        if self.starting_deadline is not None and self.jitter >= self.starting_deadline:
            raise ConfigurationError(
                f"schedule {self.name}: jitter ({self.jitter}s) must be smaller than "
                f"starting_deadline ({self.starting_deadline}s), or every delayed run would "
                "be cancelled as missed")
        self.cron_schedule()  # validates the expression and the zone

    def cron_schedule(self) -> Timetable:
        try:
            return cron_for(self.cron, self.tz)
        except CronError as exc:
            raise CronError(f"schedule {self.name}: {exc}") from exc

    def definition_hash(self) -> str:
        """Changes when anything but the name changes: reconcile compares it.

        Remembered on the (frozen) definition, and built from the fields directly: the
        same text as hashing ``asdict`` gave (stored hashes still compare equal), without
        its deep copies (three quarters of a 100,000-schedule reconcile)."""
        known: str | None = self.__dict__.get("_definition_hash")
        if known is None:
            body = {k: getattr(self, k) for k in _HASHED_FIELDS}
            for k in _HASHED_IF_SET:  # fields added later: hashes stored before still match
                if body[k] is None:
                    del body[k]
            text = json.dumps(body, sort_keys=True, default=str)
            known = hashlib.sha256(text.encode()).hexdigest()[:32]
            self.__dict__["_definition_hash"] = known  # not a field: eq and repr ignore it
        return known

    def window(self, cron: Timetable) -> timedelta | None:
        """How far back the catch-up policy looks; None: no bound (``all`` by default)."""
        if self.catchup_window is not None:
            return timedelta(seconds=self.catchup_window)
        if self.catchup is Catchup.ALL:
            return None
        return cron.period_hint()


#: What the definition hash covers: every field but the name (and the rule's code).
_HASHED_FIELDS = tuple(f.name for f in fields(ScheduleDef)
                       if f.name not in ("name", "items_rule"))
#: Fields the hash covers only when set (added after hashes were first stored).
_HASHED_IF_SET = ("expect_items", "expect_items_rule")


def job_key(schedule: str, fire_at: datetime) -> str:
    """The job's unique key: one per (schedule, fire instant in UTC)."""
    return f"schedule:{schedule}:{iso_z(fire_at)}"


@functools.lru_cache(maxsize=1024)
def iso_z(t: datetime) -> str:
    """An instant in ISO 8601 UTC with ``Z``; microseconds only when present.

    Cached: a burst of schedules shares a few fire instants, each written in a job's key,
    its meta and an event (a fifth of a 10,000-schedule pass was spent here)."""
    u = t.astimezone(UTC)
    text = u.strftime("%Y-%m-%dT%H:%M:%S")
    if u.microsecond:
        text += f".{u.microsecond:06d}"
    return text + "Z"


def jitter_offset(schedule: str, fire_at: datetime, jitter: float) -> timedelta:
    """A stable offset in [0, jitter) from a hash of (schedule, fire instant).

    Every leader computes the same offset for the same occurrence, so a handover never
    moves a run; the offset changes the run time, never the key.
    """
    if jitter <= 0:
        return timedelta(0)
    digest = hashlib.sha256(f"{schedule}\x00{iso_z(fire_at)}".encode()).digest()
    fraction = int.from_bytes(digest[:8], "big") / 2**64  # [0, 1)
    return timedelta(microseconds=int(fraction * jitter * 1_000_000))


def job_meta(defn: ScheduleDef, cron: Timetable, fire_at: datetime, kind: RunKind
             ) -> dict[str, Any]:
    """What the job records about the occurrence that made it."""
    return {"schedule": defn.name, "fire_at": iso_z(fire_at),
            "fire_local": _local_iso(cron, defn.tz, fire_at), "tz": defn.tz, "kind": kind.value}


_LOCAL_ISO: dict[tuple[str, datetime], str] = {}


def _local_iso(cron: Timetable, tz: str, fire_at: datetime) -> str:
    """A fire instant on the zone's clock, as text; remembered per (zone, instant)."""
    key = (tz, fire_at)
    text = _LOCAL_ISO.get(key)
    if text is None:
        if len(_LOCAL_ISO) >= 1024:
            _LOCAL_ISO.clear()
        text = _LOCAL_ISO[key] = cron.local(fire_at).isoformat()
    return text


def job_meta_json(defn: ScheduleDef, cron: Timetable, fire_at: datetime, kind: RunKind
                  ) -> str:
    """:func:`job_meta` as compact JSON text, written without building the dict (the same
    text ``json.dumps`` gives: the instants need no escaping, the names are escaped)."""
    name, tz = encode_basestring_ascii(defn.name), encode_basestring_ascii(defn.tz)
    return (f'{{"schedule":{name},"fire_at":"{iso_z(fire_at)}",'
            f'"fire_local":"{_local_iso(cron, defn.tz, fire_at)}","tz":{tz},'
            f'"kind":"{kind.value}"}}')


# -- the decision ---------------------------------------------------------------------


@dataclass(frozen=True)
class ActiveRun:
    fire_at: datetime
    job_id: int
    cancel_requested: bool = False


@dataclass(frozen=True)
class PendingRun:
    fire_at: datetime
    kind: RunKind


@dataclass(frozen=True)
class Snapshot:
    """A schedule's state, read inside the firing transaction."""

    cursor: datetime | None
    paused: bool
    catchup_override: Catchup | None
    active: tuple[ActiveRun, ...] = ()
    pending: tuple[PendingRun, ...] = ()  # oldest first


@dataclass(frozen=True)
class Decision:
    fire_at: datetime
    kind: RunKind
    status: RunStatus  # ENQUEUED, PENDING, SKIPPED or MISSED
    reason: str | None = None
    run_at: datetime | None = None  # for ENQUEUED: fire instant + jitter


@dataclass
class Plan:
    new: list[Decision] = field(default_factory=list)  # occurrences to record
    released: list[Decision] = field(default_factory=list)  # pending ones: enqueue / miss
    revive: list[Decision] = field(default_factory=list)  # missed/skipped ones a backfill reruns
    cancel_jobs: list[int] = field(default_factory=list)  # overlap cancel/terminate_other
    cursor: datetime | None = None  # the new cursor (None: unchanged)
    clear_override: bool = False
    missed_unrecorded: int = 0  # missed beyond MISSED_RECORD_CAP, counted only
    warnings: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.new or self.released or self.revive or self.cancel_jobs
                    or self.cursor or self.clear_override)


#: Occurrences a person asked for: late by design (a backfill of last week, a run now
#: behind a busy queue), so the starting deadline, which keeps the scheduler from
#: starting stale runs of its own, does not apply to them.
ASKED_FOR = frozenset({RunKind.TRIGGER, RunKind.BACKFILL})


def _past_deadline(defn: ScheduleDef, fire_at: datetime, now: datetime,
                   kind: RunKind = RunKind.CRON) -> bool:
    return (defn.starting_deadline is not None and kind not in ASKED_FOR
            and now > fire_at + timedelta(seconds=defn.starting_deadline))


def _deadline_reason(defn: ScheduleDef) -> str:
    return f"starting deadline ({defn.starting_deadline:g}s after the fire instant) passed"


def plan_tick(defn: ScheduleDef, cron: Timetable, snap: Snapshot, now: datetime,
              grace: timedelta) -> Plan:
    """Decide what one scheduler pass does for one schedule at ``now``.

    1. Release buffered occurrences when nothing is active (one at a time, oldest
       first; one past its starting deadline is recorded as missed instead).
    2. Take every fire instant from the cursor up to ``now``. Those found within
       ``grace`` of their instant are on time; older ones were missed during downtime
       and the catch-up policy decides which of them run.
    3. Run each chosen occurrence through the overlap policy.
    """
    # The common case first, with the plan the general path below makes for it (a
    # test compares them): one occurrence due on time, nothing buffered or in its way.
    cursor = snap.cursor
    if (cursor is not None and cursor <= now and now - cursor <= grace and not snap.paused
            and not snap.pending and snap.catchup_override is None
            and (not snap.active or defn.overlap is Overlap.ALLOW_ALL)
            and not _past_deadline(defn, cursor, now)):
        nxt = cron.next_after(cursor)
        if nxt > now:
            run_at = cursor + jitter_offset(defn.name, cursor, defn.jitter)
            return Plan(new=[Decision(cursor, RunKind.CRON, RunStatus.ENQUEUED, None, run_at)],
                        cursor=nxt)
    return _plan_general(defn, cron, snap, now, grace)


def _plan_general(defn: ScheduleDef, cron: Timetable, snap: Snapshot, now: datetime,
                  grace: timedelta) -> Plan:
    plan = Plan()
    if snap.paused:
        return plan
    active = list(snap.active)
    pending = list(snap.pending)

    def release_one() -> None:
        while pending and not active:
            p = pending.pop(0)
            if _past_deadline(defn, p.fire_at, now, p.kind):
                plan.released.append(Decision(p.fire_at, p.kind, RunStatus.MISSED,
                                              _deadline_reason(defn)))
                continue
            run_at = p.fire_at + jitter_offset(defn.name, p.fire_at, defn.jitter)
            plan.released.append(Decision(p.fire_at, p.kind, RunStatus.ENQUEUED, None, run_at))
            active.append(ActiveRun(p.fire_at, -1))

    release_one()
    # Ask again each pass for runs a cancel_other policy is waiting on (idempotent).
    if pending and defn.overlap in (Overlap.CANCEL_OTHER, Overlap.TERMINATE_OTHER):
        plan.cancel_jobs += [a.job_id for a in active if a.job_id > 0 and not a.cancel_requested]

    if snap.cursor is None or snap.cursor > now:
        if snap.cursor is None:
            plan.cursor = cron.next_after(now)
        return plan

    # -- 2. what came due ----------------------------------------------------------
    late: deque[datetime] = deque(maxlen=MISSED_RECORD_CAP + DEFAULT_CATCHUP_CAP
                                  + max(defn.catchup_cap, 1))
    late_count = 0
    jumped = False
    on_time: list[datetime] = []
    f = snap.cursor
    while f <= now:
        if now - f <= grace:
            on_time.append(f)
        else:
            late.append(f)
            late_count += 1
            if late_count >= MISSED_COUNT_CAP and not jumped:
                jumped = True
                # A very long outage: stop counting, jump to what is still in reach.
                horizon = now - max(grace, defn.window(cron) or timedelta(0))
                nxt = cron.next_after(max(f, horizon))
                plan.warnings.append(f"schedule {defn.name}: more than {MISSED_COUNT_CAP} "
                                     "missed occurrences; the count is a lower bound")
                f = nxt
                continue
        f = cron.next_after(f)
    plan.cursor = f
    policy = snap.catchup_override or defn.catchup
    if snap.catchup_override is not None:
        plan.clear_override = True

    window = defn.window(cron)
    if snap.catchup_override is not None and defn.catchup_window is None:
        window = None if policy is Catchup.ALL else cron.period_hint()
    in_window = [x for x in late if window is None or now - x <= window]
    run_late: list[datetime] = []
    if policy is Catchup.ALL:
        run_late = in_window[-defn.catchup_cap:]
        if len(in_window) > defn.catchup_cap:
            plan.warnings.append(
                f"schedule {defn.name}: {len(in_window)} occurrences to catch up, over the cap "
                f"of {defn.catchup_cap}; the {defn.catchup_cap} most recent run, the rest are "
                "recorded as missed")
    elif policy is Catchup.LATEST and in_window and not on_time:
        run_late = in_window[-1:]
    chosen = set(run_late)
    missed = [x for x in late if x not in chosen]
    plan.missed_unrecorded = late_count - len(late) + max(len(missed) - MISSED_RECORD_CAP, 0)
    for x in missed[-MISSED_RECORD_CAP:]:
        if policy is not Catchup.SKIP and window is not None and now - x > window:
            reason = f"missed during downtime, outside the catch-up window ({policy.value})"
        else:
            reason = f"missed during downtime (catchup={policy.value})"
        plan.new.append(Decision(x, RunKind.CATCHUP, RunStatus.MISSED, reason))

    to_run = [(x, RunKind.CATCHUP) for x in run_late] + [(x, RunKind.CRON) for x in on_time]
    # -- 3. overlap ------------------------------------------------------------------
    for fire_at, kind in to_run:
        if _past_deadline(defn, fire_at, now, kind):
            plan.new.append(Decision(fire_at, kind, RunStatus.MISSED, _deadline_reason(defn)))
            continue
        run_at = fire_at + jitter_offset(defn.name, fire_at, defn.jitter)
        enqueue = Decision(fire_at, kind, RunStatus.ENQUEUED, None, run_at)
        if not active and not pending:
            plan.new.append(enqueue)
            active.append(ActiveRun(fire_at, -1))
            continue
        busy = ", ".join(iso_z(a.fire_at) for a in active) or "buffered runs"
        ov = defn.overlap
        if ov is Overlap.ALLOW_ALL:
            plan.new.append(enqueue)
            active.append(ActiveRun(fire_at, -1))
        elif ov is Overlap.SKIP:
            plan.new.append(Decision(fire_at, kind, RunStatus.SKIPPED,
                                     f"overlap=skip: the run of {busy} is still active"))
        elif ov is Overlap.BUFFER_ONE and pending:
            plan.new.append(Decision(fire_at, kind, RunStatus.SKIPPED,
                                     "overlap=buffer_one: one run is already buffered"))
        elif ov in (Overlap.BUFFER_ONE, Overlap.BUFFER_ALL, Overlap.CANCEL_OTHER):
            if ov is Overlap.CANCEL_OTHER:
                plan.cancel_jobs += [a.job_id for a in active
                                     if a.job_id > 0 and not a.cancel_requested]
            plan.new.append(Decision(fire_at, kind, RunStatus.PENDING,
                                     f"overlap={ov.value}: waits for {busy}"))
            pending.append(PendingRun(fire_at, kind))
        else:  # TERMINATE_OTHER
            plan.cancel_jobs += [a.job_id for a in active
                                 if a.job_id > 0 and not a.cancel_requested]
            plan.new.append(enqueue)
            active = [ActiveRun(fire_at, -1)]
    plan.cancel_jobs = sorted(set(plan.cancel_jobs))
    return plan


def skipped_while_paused(cron: Timetable, cursor: datetime, now: datetime,
                         limit: int = MISSED_RECORD_CAP) -> tuple[list[datetime], int, datetime]:
    """At resume without catch-up: the fires in [cursor, now] (newest ``limit``), how many
    there were in all, and the new cursor."""
    kept: deque[datetime] = deque(maxlen=limit)
    count = 0
    f = cursor
    while f <= now and count < MISSED_COUNT_CAP:
        kept.append(f)
        count += 1
        f = cron.next_after(f)
    if f <= now:
        f = cron.next_after(now)
    return list(kept), count, f


def backfill_instants(cron: Timetable, start: datetime, end: datetime,
                      limit: int = 10_000) -> list[datetime]:
    """Fire instants in [start, end], both inclusive; refuses more than ``limit``."""
    if end < start:
        raise ConfigurationError(f"backfill: --to ({iso_z(end)}) is before --from "
                                 f"({iso_z(start)})")
    out: list[datetime] = []
    for f in cron.iter_after(start - timedelta(microseconds=1)):
        if f > end:
            break
        out.append(f)
        if len(out) > limit:
            raise ConfigurationError(f"backfill: more than {limit} occurrences between "
                                     f"{iso_z(start)} and {iso_z(end)}; use a smaller window")
    return out


@functools.lru_cache(maxsize=512)
def cron_for(cron: str, tz: str) -> Timetable:
    """Parsed schedules, cached: the leader reads definitions from the database each pass."""
    return timetable(cron, tz)


def declare_schedule(name: str, cron: str, task: str, job: NewJob, *, tz: str = "UTC",
                     catchup: CatchupPolicy = "latest",
                     catchup_window: Duration | None = None,
                     catchup_cap: int = DEFAULT_CATCHUP_CAP, overlap: OverlapPolicy = "skip",
                     starting_deadline: Duration | None = None,
                     jitter: Duration | None = None,
                     expect_success_within: Duration | None = None,
                     pause_on_failure: bool = False,
                     expect_items: ItemsExpectation | None = None) -> ScheduleDef:
    """Check a declaration; ``job`` is the task's job as every occurrence enqueues it
    (built and validated by the task)."""
    # Checked here, where code and run time declare, not in ScheduleDef: a name stored
    # before names were checked still loads (and is acted on by its id).
    check_schedule_name(name)
    if not isinstance(cron, str):
        raise ConfigurationError(f"schedule {name}: cron must be a string, not {cron!r}")
    where = f"schedule {name}"
    return ScheduleDef(
        name=name, cron=cron, tz=tz, task=task, args_json=job.args_json, queue=job.queue,
        priority=job.priority, max_attempts=job.max_attempts, timeout=job.timeout,
        catchup=catchup,  # type: ignore[arg-type]
        catchup_window=seconds(catchup_window, f"{where}: catchup_window"),
        catchup_cap=catchup_cap, overlap=overlap,  # type: ignore[arg-type]
        starting_deadline=seconds(starting_deadline, f"{where}: starting_deadline"),
        jitter=seconds(jitter, f"{where}: jitter", allow_zero=True) or 0.0,
        expect_success_within=seconds(expect_success_within, f"{where}: expect_success_within"),
        pause_on_failure=bool(pause_on_failure),
        **items_expectation(expect_items, f"{where}: expect_items"),
    )





def occurrence_job(defn: ScheduleDef, d: Decision) -> NewJob:
    """The job one occurrence enqueues: the schedule's job by value, due at the decided
    instant, unique per (schedule, fire instant), its meta saying which occurrence."""
    return NewJob(task=defn.task, queue=defn.queue, args_json=defn.args_json,
                  priority=defn.priority, max_attempts=defn.max_attempts, run_at=d.run_at,
                  unique_key=job_key(defn.name, d.fire_at), timeout=defn.timeout,
                  meta_json=job_meta_json(defn, defn.cron_schedule(), d.fire_at, d.kind))
