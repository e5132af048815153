"""Schedule storage: declarations, the leader's transactions, what people read and do.

The planner is a test double here (a plain function): what the store promises is to
hand it a true snapshot and to write its plan, whole, in one transaction.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta

import pytest

from shiftwork import FakeClock
from shiftwork.core.states import JobState
from shiftwork.model.schedule_values import Catchup, RunKind, RunStatus
from shiftwork.schedules.definition import Decision, Plan, ScheduleDef, Snapshot, iso_z
from shiftwork.schedules.errors import NotLeader, UnknownScheduleError
from shiftwork.schedules.records import Applied
from shiftwork.schedules.stored import schedules_of
from shiftwork.store.base import Store
from shiftwork.store.fleet import LEADER_NAME

from .helpers import claim_one, done

MINUTE = timedelta(minutes=1)


def defn(name: str = "s", cron: str = "* * * * *", **kwargs: object) -> ScheduleDef:
    return ScheduleDef(name=name, cron=cron, tz="UTC", task="t",
                       args_json=json.dumps({"args": [], "kwargs": {}}), queue="q",
                       **kwargs)


def next_minute(_d: ScheduleDef, now: datetime) -> datetime:
    return now.replace(second=0) + MINUTE


def fire_due(_d: ScheduleDef, snap: Snapshot, now: datetime) -> Plan:
    """Enqueue the cursor's occurrence when due; the cursor moves a minute on."""
    assert snap.cursor is not None
    if snap.cursor > now:
        return Plan()
    return Plan(new=[Decision(snap.cursor, RunKind.CRON, RunStatus.ENQUEUED)],
                cursor=snap.cursor + MINUTE)


def apply(store: Store, name: str, planner: Callable[[ScheduleDef, Snapshot, datetime], Plan],
          owner: str | None = None, term: int | None = None) -> Applied:
    """The leader's or a person's pass; jobs go in through the store's own insert (the App
    passes its enqueue path, with its span)."""
    return schedules_of(store).apply(name, planner, owner, term, insert=store.jobs.insert)


def reconciled(store: Store, clock: FakeClock, *defs: ScheduleDef) -> dict[str, str]:
    return schedules_of(store).reconcile(list(defs) or [defn()], next_minute)


def test_reconcile_reports_what_it_did(store: Store, clock: FakeClock) -> None:
    assert not schedules_of(store).exist()
    assert reconciled(store, clock, defn("a"), defn("b")) == {"a": "created", "b": "created"}
    assert schedules_of(store).exist()
    assert reconciled(store, clock, defn("a"), defn("b", cron="*/5 * * * *")) == {
        "a": "unchanged", "b": "changed"}
    assert reconciled(store, clock, defn("a")) == {"a": "unchanged", "b": "removed"}
    assert [i.name for i in schedules_of(store).overview()] == ["a"]
    assert [i.name for i in schedules_of(store).overview(include_removed=True)] == ["a", "b"]
    assert reconciled(store, clock, defn("a"), defn("b"))["b"] == "revived"


def test_reconcile_keeps_the_cursor_unless_the_cron_changes(store: Store,
                                                           clock: FakeClock) -> None:
    reconciled(store, clock, defn())
    cursor = schedules_of(store).get("s").next_fire_at
    clock.advance(600)
    reconciled(store, clock, defn(priority=3))  # changed, same cron
    assert schedules_of(store).get("s").next_fire_at == cursor
    reconciled(store, clock, defn(cron="*/2 * * * *"))
    assert schedules_of(store).get("s").next_fire_at == next_minute(defn(), clock.now())


def test_due_and_apply_enqueue_once(store: Store, clock: FakeClock) -> None:
    reconciled(store, clock)
    assert schedules_of(store).due() == []
    fire_at = schedules_of(store).get("s").next_fire_at
    assert fire_at is not None
    clock.set(fire_at + timedelta(seconds=1))
    assert schedules_of(store).due() == ["s"]
    applied = apply(store, "s", fire_due)
    [(at, job_id)] = applied.enqueued
    assert at == fire_at and applied.now == clock.now()
    job = store.jobs.get(job_id)
    assert (job.task, job.queue, job.state) == ("t", "q", JobState.AVAILABLE)
    assert schedules_of(store).get("s").next_fire_at == fire_at + MINUTE
    assert schedules_of(store).due() == []
    assert apply(store, "s", fire_due).enqueued == []  # not due again
    [run] = schedules_of(store).runs_list("s")
    assert (run.fire_at, run.status, run.job_id, run.kind) == (fire_at, RunStatus.ENQUEUED,
                                                               job_id, RunKind.CRON)


def test_apply_writes_an_occurrence_once_even_if_planned_twice(store: Store,
                                                               clock: FakeClock) -> None:
    reconciled(store, clock)
    fire_at = clock.now().replace(second=0)

    def trigger(_d: ScheduleDef, _s: Snapshot, _now: datetime) -> Plan:
        return Plan(new=[Decision(fire_at, RunKind.TRIGGER, RunStatus.ENQUEUED)])

    assert len(apply(store, "s", trigger).enqueued) == 1
    assert apply(store, "s", trigger).enqueued == []
    assert len(schedules_of(store).runs_list("s")) == 1


def test_apply_checks_leadership_when_given_a_term(store: Store, clock: FakeClock) -> None:
    reconciled(store, clock)
    clock.advance(120)
    with pytest.raises(NotLeader):
        apply(store, "s", fire_due, "me", 1)
    term = store.fleet.leader_acquire(LEADER_NAME, "me", ttl=30)
    assert term is not None
    assert len(apply(store, "s", fire_due, "me", term).enqueued) == 1
    with pytest.raises(NotLeader):
        apply(store, "s", fire_due, "me", term + 1)


def test_apply_of_an_unknown_schedule_raises(store: Store) -> None:
    with pytest.raises(UnknownScheduleError):
        apply(store, "nothing", fire_due)


def test_runs_sync_copies_finished_outcomes(store: Store, clock: FakeClock) -> None:
    reconciled(store, clock)
    clock.advance(120)
    [(fire_at, job_id)] = apply(store, "s", fire_due).enqueued
    term = store.fleet.leader_acquire(LEADER_NAME, "me", ttl=30)
    assert term is not None
    assert schedules_of(store).runs_sync("me", term) == []
    store.jobs.complete_many([done(claim_one(store), JobState.DEAD)])
    assert schedules_of(store).runs_sync("me", term) == [("s", fire_at, RunStatus.FAILED, job_id)]
    assert schedules_of(store).runs_sync("me", term) == []
    with pytest.raises(NotLeader):
        schedules_of(store).runs_sync("other", term)


def test_runs_expire_cancels_jobs_past_their_starting_deadline(store: Store,
                                                              clock: FakeClock) -> None:
    reconciled(store, clock, defn(starting_deadline=30))
    fire_at = schedules_of(store).get("s").next_fire_at
    assert fire_at is not None
    clock.set(fire_at)
    [(_, job_id)] = apply(store, "s", fire_due).enqueued
    term = store.fleet.leader_acquire(LEADER_NAME, "me", ttl=3600)
    assert term is not None
    clock.set(fire_at + timedelta(seconds=30))
    assert schedules_of(store).runs_expire("me", term) == []
    clock.set(fire_at + timedelta(seconds=31))
    assert schedules_of(store).runs_expire("me", term) == [("s", fire_at, job_id)]
    assert store.jobs.get(job_id).state is JobState.CANCELLED
    assert schedules_of(store).runs_list("s")[0].status is RunStatus.MISSED
    assert schedules_of(store).runs_expire("me", term) == []


def catch_up_due(_d: ScheduleDef, snap: Snapshot, now: datetime) -> Plan:
    assert snap.cursor is not None
    return Plan(new=[Decision(snap.cursor, RunKind.CATCHUP, RunStatus.ENQUEUED)],
                cursor=snap.cursor + MINUTE)


@pytest.mark.parametrize("kind", ["cron", "catchup"])
def test_runs_expire_counts_an_on_time_run_from_its_recording(store: Store, clock: FakeClock,
                                                               kind: str) -> None:
    """An occurrence taken on time but written late by a long burst (kind cron, recorded
    after its fire instant) gets its whole starting deadline from when it was written; one
    caught up after downtime counts from its fire instant."""
    reconciled(store, clock, defn(starting_deadline=30))
    fire_at = schedules_of(store).get("s").next_fire_at
    assert fire_at is not None
    clock.set(fire_at + timedelta(seconds=20))  # the burst reached it 20 s late
    [(_, job_id)] = apply(store, "s", fire_due if kind == "cron" else catch_up_due).enqueued
    term = store.fleet.leader_acquire(LEADER_NAME, "me", ttl=3600)
    assert term is not None
    clock.set(fire_at + timedelta(seconds=45))
    expired = schedules_of(store).runs_expire("me", term)
    assert expired == ([] if kind == "cron" else [("s", fire_at, job_id)])
    clock.set(fire_at + timedelta(seconds=51))
    assert schedules_of(store).runs_expire("me", term) == ([("s", fire_at, job_id)]
                                                       if kind == "cron" else [])


def test_runs_check_late_reports_each_late_run_once(store: Store, clock: FakeClock) -> None:
    reconciled(store, clock, defn(expect_success_within=60))
    clock.set(next_minute(defn(), clock.now()))
    [(fire_at, job_id)] = apply(store, "s", fire_due).enqueued
    term = store.fleet.leader_acquire(LEADER_NAME, "me", ttl=3600)
    assert term is not None
    assert schedules_of(store).runs_check_late("me", term) == []
    clock.set(fire_at + timedelta(seconds=61))
    [late] = schedules_of(store).runs_check_late("me", term)
    assert (late.schedule, late.fire_at, late.job_id, late.expect_success_within) == (
        "s", fire_at, job_id, 60)
    assert schedules_of(store).runs_check_late("me", term) == []
    assert schedules_of(store).get("s").last_late_fire_at == fire_at


def test_runs_prune_deletes_old_finished_runs(store: Store, clock: FakeClock) -> None:
    reconciled(store, clock)
    clock.advance(120)
    apply(store, "s", fire_due)
    term = store.fleet.leader_acquire(LEADER_NAME, "me", ttl=3600)
    assert term is not None
    assert schedules_of(store).runs_prune(older_than=0) == 0  # still running: kept
    store.jobs.complete_many([done(claim_one(store))])
    schedules_of(store).runs_sync("me", term)
    clock.advance(100)
    assert schedules_of(store).runs_prune(older_than=1000) == 0
    assert schedules_of(store).runs_prune(older_than=50) == 1
    assert schedules_of(store).runs_list("s") == []


def test_get_and_list_describe_a_schedule(store: Store, clock: FakeClock) -> None:
    reconciled(store, clock, defn(priority=2))
    info = schedules_of(store).get("s")
    assert (info.defn.cron, info.defn.priority, info.paused, info.removed_at, info.pending,
            info.not_run, info.last_fire_at) == ("* * * * *", 2, False, None, 0, 0, None)
    assert info.now == clock.now()
    assert schedules_of(store).overview() == [info]
    with pytest.raises(UnknownScheduleError):
        schedules_of(store).get("nothing")


def test_runs_list_is_newest_first_with_a_limit(store: Store, clock: FakeClock) -> None:
    reconciled(store, clock)
    clock.advance(180)
    apply(store, "s", fire_due)
    apply(store, "s", fire_due)
    first, second = sorted(r.fire_at for r in schedules_of(store).runs_list("s"))
    assert [r.fire_at for r in schedules_of(store).runs_list("s")] == [second, first]
    assert [r.fire_at for r in schedules_of(store).runs_list("s", limit=1)] == [second]
    assert schedules_of(store).runs_list("nothing") == []


def test_pause_and_resume(store: Store, clock: FakeClock) -> None:
    reconciled(store, clock)
    schedules_of(store).set_paused("s", True, reason="maintenance")
    info = schedules_of(store).get("s")
    assert info.paused and info.paused_reason == "maintenance"
    seen: list[datetime | None] = []

    def resume(_d: ScheduleDef, cursor: datetime | None, now: datetime
               ) -> tuple[Plan, str | None]:
        seen.append(cursor)
        return Plan(cursor=now.replace(second=0) + 2 * MINUTE), Catchup.SKIP.value

    plan = schedules_of(store).resume("s", resume)
    assert plan is not None and seen == [info.next_fire_at]
    after = schedules_of(store).get("s")
    assert not after.paused and after.next_fire_at == plan.cursor
    assert schedules_of(store).resume("s", resume) is None  # not paused: nothing to do
    with pytest.raises(UnknownScheduleError):
        schedules_of(store).set_paused("nothing", True)
    with pytest.raises(UnknownScheduleError):
        schedules_of(store).resume("nothing", resume)


def test_due_as_of_gives_the_instant_and_the_earliest_cursor_first(store: Store,
                                                                    clock: FakeClock) -> None:
    schedules_of(store).reconcile(
        [defn("late"), defn("early"), defn("idle")],
        lambda d, now: next_minute(d, now) + timedelta(days=365 if d.name == "idle" else 0))
    fire_at = schedules_of(store).get("early").next_fire_at
    assert fire_at is not None
    clock.set(fire_at + timedelta(seconds=1))
    assert schedules_of(store).due_as_of() == (clock.now(), ["early", "late"])


def test_fire_decides_a_batch_in_one_transaction(store: Store, clock: FakeClock) -> None:
    names = [f"s{i}" for i in range(5)]
    reconciled(store, clock, *[defn(n) for n in names])
    fire_at = schedules_of(store).get("s0").next_fire_at
    assert fire_at is not None
    clock.set(fire_at + timedelta(seconds=1))
    term = store.fleet.leader_acquire(LEADER_NAME, "me", ttl=3600)
    assert term is not None
    seen: list[str] = []

    def planner(d: ScheduleDef, snap: Snapshot, now: datetime) -> Plan:
        seen.append(d.name)
        return fire_due(d, snap, now)

    fired = schedules_of(store).fire([*names, "unknown"], planner, "me", term,
                                 insert=store.jobs.insert)
    assert sorted(seen) == names  # an unknown name is not decided
    assert sorted(name for name, _ in fired) == names
    for name, applied in fired:
        [(at, job_id)] = applied.enqueued
        assert at == fire_at and applied.now == clock.now()
        [run] = schedules_of(store).runs_list(name)
        assert (run.fire_at, run.job_id, run.status) == (fire_at, job_id, RunStatus.ENQUEUED)
        assert store.jobs.get(job_id).unique_key == f"schedule:{name}:{iso_z(fire_at)}"
        assert schedules_of(store).get(name).next_fire_at == fire_at + MINUTE
    # Planned again (a racing ex-leader's plan): the keys keep each occurrence once.
    again = schedules_of(store).fire(names, lambda d, s, n: Plan(
        new=[Decision(fire_at, RunKind.CRON, RunStatus.ENQUEUED)]), "me", term,
        insert=store.jobs.insert)
    assert all(applied.enqueued == [] for _, applied in again)
    assert len(store.jobs.list(limit=100)) == 5
    with pytest.raises(NotLeader):
        schedules_of(store).fire(names, planner, "other", term, insert=store.jobs.insert)


def test_runtime_schedules_are_added_removed_and_kept_by_reconcile(
        store: Store, clock: FakeClock) -> None:
    from shiftwork.core.errors import ConfigurationError
    from shiftwork.schedules.origin import ScheduleNameTaken

    reconciled(store, clock, defn("code"))
    assert schedules_of(store).add(defn("rt", cron="*/5 * * * *"), next_minute) == "created"
    info = schedules_of(store).get("rt")
    assert info.origin == "runtime" and info.next_fire_at == next_minute(defn(), clock.now())
    assert schedules_of(store).get("code").origin == "code"
    # The reconcile neither removes nor changes it.
    assert reconciled(store, clock, defn("code")) == {"code": "unchanged"}
    assert schedules_of(store).get("rt").removed_at is None
    with pytest.raises(ScheduleNameTaken, match="declared in code"):
        schedules_of(store).add(defn("code"), next_minute)
    with pytest.raises(ScheduleNameTaken, match="already exists"):
        schedules_of(store).add(defn("rt"), next_minute)
    assert schedules_of(store).add(defn("rt", priority=2), next_minute, replace=True) == "replaced"
    assert schedules_of(store).get("rt").defn.priority == 2
    # Fired by the same leader transaction as any schedule.
    clock.advance(600)
    assert "rt" in schedules_of(store).due()
    assert len(apply(store, "rt", fire_due).enqueued) == 1
    schedules_of(store).remove("rt")
    assert schedules_of(store).get("rt").removed_at is not None
    assert "rt" not in schedules_of(store).due()
    with pytest.raises(UnknownScheduleError):
        schedules_of(store).remove("rt")
    with pytest.raises(ConfigurationError, match="declared in code"):
        schedules_of(store).remove("code")
    assert schedules_of(store).add(defn("rt"), next_minute) == "revived"
    assert len(schedules_of(store).runs_list("rt")) == 1  # its history was kept
