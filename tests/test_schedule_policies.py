"""Schedule policies, driven by a FakeClock and in-process leader passes, on both engines.

Jobs are moved by hand (claim = running, complete = finished) so each policy's decision
is checked at exact instants without real time passing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import pytest

from shiftwork import App, ConfigurationError, FakeClock, JobState, PayloadError
from shiftwork.jobs.enqueue import insert_rows
from shiftwork.model.outcome import Outcome
from shiftwork.model.schedule_values import RunStatus
from shiftwork.schedules.cron import CronError
from shiftwork.schedules.definition import iso_z, jitter_offset, plan_tick
from shiftwork.schedules.errors import NotLeader
from shiftwork.schedules.scheduler import reconcile, run_pass
from shiftwork.schedules.stored import schedules_of
from shiftwork.store.fleet import LEADER_NAME

T0 = datetime(2030, 1, 1, tzinfo=UTC)


def at(minute: int, second: int = 0) -> datetime:
    return T0 + timedelta(minutes=minute, seconds=second)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
def sapp(make_app: Callable[..., App], clock: FakeClock) -> App:
    return make_app(clock=clock)


def noop() -> None:
    pass


def leader_pass(app: App, owner: str = "test-leader") -> int:
    term = app.store.fleet.leader_acquire(LEADER_NAME, owner, 3600)
    assert term is not None
    return run_pass(app.runtime, owner, term)


def runs(app: App, name: str) -> dict[datetime, Any]:
    return {r.fire_at: r for r in schedules_of(app.store).runs_list(name, 1000)}


def statuses(app: App, name: str) -> dict[str, list[datetime]]:
    out: dict[str, list[datetime]] = {}
    for r in sorted(runs(app, name).values(), key=lambda r: r.fire_at):
        out.setdefault(r.status.value, []).append(r.fire_at)
    return out


def claim(app: App, queue: str = "default") -> list[Any]:
    return app.store.jobs.claim(queue, 100, "w1", 3600)


def finish(app: App, job_id: int, state: JobState = JobState.SUCCEEDED) -> None:
    job = app.get_job(job_id)
    assert app.store.jobs.complete_many([Outcome(job_id, job.attempt, state)]) == {job_id}


def declare(app: App, name: str, cron: str = "* * * * *", **policy: Any) -> None:
    task = app.tasks.get("noop") or app.task(name="noop")(noop)
    app.schedule(name, cron, task, **policy)


# -- declaration -----------------------------------------------------------------------


def test_declaration_is_checked(sapp: App) -> None:
    task = sapp.task(name="noop")(noop)
    with pytest.raises(CronError, match="minute field"):
        sapp.schedule("a", "61 * * * *", task)
    with pytest.raises(CronError, match="day-of-week field"):
        sapp.schedule("a", "0 0 * * FRI-MON", task)
    with pytest.raises(CronError, match="abbreviation"):
        sapp.schedule("a", "0 0 * * *", task, tz="EST")
    with pytest.raises(ConfigurationError, match="catchup 'sometimes'"):
        sapp.schedule("a", "0 0 * * *", task, catchup="sometimes")
    with pytest.raises(ConfigurationError, match="overlap"):
        sapp.schedule("a", "0 0 * * *", task, overlap="queue")
    with pytest.raises(ConfigurationError, match="jitter"):
        sapp.schedule("a", "0 0 * * *", task, jitter=60, starting_deadline=30)
    with pytest.raises(PayloadError, match="arguments do not match"):
        sapp.schedule("a", "0 0 * * *", task, args=(1,))
    sapp.schedule("a", "0 0 * * *", task)
    with pytest.raises(ConfigurationError, match="declared twice"):
        sapp.schedule("a", "0 0 * * *", task)

    @sapp.periodic("0 2 * * *", tz="Europe/Berlin", name="nightly", queue="reports")
    def nightly() -> None: ...

    assert sapp.schedules["nightly"].queue == "reports"
    assert sapp.tasks["nightly"].options.queue == "reports"


# -- firing on time, exactly once ---------------------------------------------------------


def test_fires_each_occurrence_once_with_meta(sapp: App, clock: FakeClock) -> None:
    declare(sapp, "berlin", "30 * * * *", tz="Europe/Berlin")
    assert reconcile(sapp.runtime) == {"berlin": "created"}
    assert schedules_of(sapp.store).get("berlin").next_fire_at == at(30)
    assert leader_pass(sapp) == 0
    clock.set(at(30, 1))
    assert leader_pass(sapp) == 1
    assert leader_pass(sapp) == 0  # a second pass at the same instant adds nothing
    (job,) = sapp.list_jobs()
    assert job.unique_key == "schedule:berlin:2030-01-01T00:30:00Z"
    assert job.meta["fire_at"] == "2030-01-01T00:30:00Z"
    assert job.meta["fire_local"] == "2030-01-01T01:30:00+01:00"
    assert schedules_of(sapp.store).get("berlin").next_fire_at == at(90)


def test_an_old_term_writes_nothing(sapp: App, clock: FakeClock) -> None:
    declare(sapp, "s", overlap="allow_all")
    reconcile(sapp.runtime)
    old = sapp.store.fleet.leader_acquire(LEADER_NAME, "old", 10)
    assert old is not None
    clock.set(at(1, 11))  # the old lease has lapsed
    new = sapp.store.fleet.leader_acquire(LEADER_NAME, "new", 10)
    assert new is not None and new > old
    with pytest.raises(NotLeader):
        run_pass(sapp.runtime, "old", old)
    assert sapp.list_jobs() == []
    assert run_pass(sapp.runtime, "new", new) == 1


def test_a_leader_paused_mid_transaction_rolls_back(sapp: App, clock: FakeClock) -> None:
    declare(sapp, "s", overlap="allow_all")
    reconcile(sapp.runtime)
    term = sapp.store.fleet.leader_acquire(LEADER_NAME, "slow", 10)
    clock.set(at(1, 1))
    sapp.store.fleet.leader_acquire(LEADER_NAME, "slow", 10)

    def paused_planner(defn: Any, snap: Any, now: datetime) -> Any:
        plan = plan_tick(defn, defn.cron_schedule(), snap, now, timedelta(seconds=5))
        clock.advance(30)  # the process stalls here, past its lease
        return plan

    with pytest.raises(NotLeader):
        schedules_of(sapp.store).apply("s", paused_planner, "slow", term,
                                   insert=partial(insert_rows, sapp.runtime))
    assert sapp.list_jobs() == [] and runs(sapp, "s") == {}
    assert schedules_of(sapp.store).get("s").next_fire_at == at(1)


# -- catch-up after downtime ----------------------------------------------------------------


def test_catchup_policies_after_downtime(sapp: App, clock: FakeClock,
                                         caplog: pytest.LogCaptureFixture) -> None:
    declare(sapp, "skip", catchup="skip")
    declare(sapp, "latest", catchup="latest")
    declare(sapp, "all", catchup="all", overlap="allow_all")
    declare(sapp, "all_window", catchup="all", overlap="allow_all", catchup_window=300)
    declare(sapp, "all_capped", catchup="all", overlap="allow_all", catchup_cap=3)
    reconcile(sapp.runtime)
    clock.set(at(10, 30))  # down across occurrences 00:01 .. 00:10, all > grace late
    with caplog.at_level(logging.WARNING, logger="shiftwork.scheduler"):
        leader_pass(sapp)
    minutes = [at(m) for m in range(1, 11)]
    assert statuses(sapp, "skip") == {"missed": minutes}
    assert statuses(sapp, "latest") == {"missed": minutes[:-1], "enqueued": [at(10)]}
    assert statuses(sapp, "all") == {"enqueued": minutes}
    assert statuses(sapp, "all_window") == {"missed": minutes[:5], "enqueued": minutes[5:]}
    assert statuses(sapp, "all_capped") == {"missed": minutes[:7], "enqueued": minutes[7:]}
    assert "over the cap of 3" in caplog.text
    reasons = {r.reason for r in runs(sapp, "skip").values()}
    assert reasons == {"missed during downtime (catchup=skip)"}
    for name in ("skip", "latest", "all"):  # the cursor moved past the gap
        assert schedules_of(sapp.store).get(name).next_fire_at == at(11)
    # the missed ones are visible in the listing
    assert {i.name: i.not_run for i in schedules_of(sapp.store).overview()}["skip"] == 10


def test_latest_prefers_an_on_time_occurrence(sapp: App, clock: FakeClock) -> None:
    declare(sapp, "latest", catchup="latest")
    reconcile(sapp.runtime)
    clock.set(at(5, 1))  # 00:01..00:04 late, 00:05 on time
    leader_pass(sapp)
    assert statuses(sapp, "latest") == {"missed": [at(m) for m in range(1, 5)],
                                        "enqueued": [at(5)]}


# -- overlap ---------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["skip", "buffer_one", "buffer_all", "cancel_other",
                                    "terminate_other", "allow_all"])
def test_overlap_when_a_run_outlasts_its_interval(sapp: App, clock: FakeClock,
                                                  policy: str) -> None:
    declare(sapp, "s", overlap=policy)
    reconcile(sapp.runtime)
    clock.set(at(1, 1))
    leader_pass(sapp)
    (first,) = claim(sapp)  # the 00:01 run starts and keeps running
    for m in (2, 3):
        clock.set(at(m, 1))
        leader_pass(sapp)
    st = statuses(sapp, "s")
    first_job = sapp.get_job(first.id)
    if policy == "skip":
        assert st == {"enqueued": [at(1)], "skipped": [at(2), at(3)]}
    elif policy == "buffer_one":
        assert st == {"enqueued": [at(1)], "pending": [at(2)], "skipped": [at(3)]}
    elif policy in ("buffer_all", "cancel_other"):
        assert st == {"enqueued": [at(1)], "pending": [at(2), at(3)]}
    else:  # terminate_other, allow_all
        assert st == {"enqueued": [at(1), at(2), at(3)]}
    assert first_job.cancel_requested == (policy in ("cancel_other", "terminate_other"))
    assert len(sapp.list_jobs()) == len(st["enqueued"])

    # The long run ends (cancel_other: it stops as asked); buffered runs follow in order.
    finish(sapp, first.id, JobState.CANCELLED if first_job.cancel_requested
           else JobState.SUCCEEDED)
    clock.set(at(3, 2))
    leader_pass(sapp)
    st = statuses(sapp, "s")
    if policy == "buffer_one":
        assert st["enqueued"] == [at(2)]
    elif policy in ("buffer_all", "cancel_other"):
        assert st["enqueued"] == [at(2)] and st["pending"] == [at(3)]
        (second,) = claim(sapp)
        finish(sapp, second.id)
        clock.set(at(3, 3))
        leader_pass(sapp)
        assert statuses(sapp, "s")["enqueued"] == [at(3)]
    elif policy == "skip":
        clock.set(at(4, 1))
        leader_pass(sapp)
        assert statuses(sapp, "s")["enqueued"] == [at(4)]


# -- starting deadline, jitter ------------------------------------------------------------------


def test_starting_deadline_cancels_an_unstarted_job_as_missed(sapp: App,
                                                              clock: FakeClock) -> None:
    declare(sapp, "s", starting_deadline=30, overlap="allow_all", catchup="all")
    reconcile(sapp.runtime)
    clock.set(at(1, 1))
    leader_pass(sapp)
    (job,) = sapp.list_jobs()
    # Taken on time, written at 1:01: the deadline counts from the writing (a burst's
    # own processing never makes a run miss).
    clock.set(at(1, 31))
    leader_pass(sapp)
    assert sapp.get_job(job.id).state is JobState.AVAILABLE
    clock.set(at(1, 32))
    leader_pass(sapp)
    assert sapp.get_job(job.id).state is JobState.CANCELLED
    run = runs(sapp, "s")[at(1)]
    assert run.status is RunStatus.MISSED and "starting deadline" in (run.reason or "")
    # A started job is left alone.
    clock.set(at(2, 1))
    leader_pass(sapp)
    claim(sapp)
    clock.set(at(2, 59))
    leader_pass(sapp)
    assert runs(sapp, "s")[at(2)].status is RunStatus.ENQUEUED
    # Caught up after the deadline: recorded as missed, never enqueued.
    clock.set(at(6, 0))
    leader_pass(sapp)
    assert runs(sapp, "s")[at(4)].status is RunStatus.MISSED


def test_jitter_is_stable_and_keeps_the_key(sapp: App, clock: FakeClock) -> None:
    declare(sapp, "j", jitter=40)
    reconcile(sapp.runtime)
    offsets = {jitter_offset("j", at(m), 40) for m in range(60)}
    assert all(timedelta(0) <= o < timedelta(seconds=40) for o in offsets)
    assert len(offsets) > 50  # spread, not constant
    assert jitter_offset("j", at(1), 40) == jitter_offset("j", at(1), 40)
    clock.set(at(1, 1))
    leader_pass(sapp)
    (job,) = sapp.list_jobs()
    assert job.unique_key == f"schedule:j:{iso_z(at(1))}"
    assert job.run_at == at(1) + jitter_offset("j", at(1), 40)


# -- pause, resume, trigger, backfill -------------------------------------------------------------


def test_pause_and_resume(sapp: App, clock: FakeClock) -> None:
    declare(sapp, "p", overlap="allow_all", catchup="all")
    declare(sapp, "q", overlap="allow_all", catchup="skip")
    reconcile(sapp.runtime)
    sapp.schedules.pause("p")
    sapp.schedules.pause("q")
    clock.set(at(5, 30))
    leader_pass(sapp)
    assert sapp.list_jobs() == []
    sapp.schedules.resume("p")  # no catch-up: the paused stretch is recorded as skipped
    assert statuses(sapp, "p") == {"skipped": [at(m) for m in range(1, 6)]}
    sapp.schedules.resume("q", catchup="all")  # asked to catch up: the next pass runs them
    leader_pass(sapp)
    assert statuses(sapp, "q") == {"enqueued": [at(m) for m in range(1, 6)]}
    clock.set(at(6, 1))
    leader_pass(sapp)
    assert runs(sapp, "p")[at(6)].status is RunStatus.ENQUEUED


def test_trigger_runs_now(sapp: App, clock: FakeClock) -> None:
    declare(sapp, "t", "0 0 1 1 *")
    reconcile(sapp.runtime)
    clock.set(at(3, 7))
    job_id = sapp.schedules.trigger("t")
    job = sapp.get_job(job_id)
    assert job.state is JobState.AVAILABLE and job.meta["kind"] == "trigger"
    assert runs(sapp, "t")[at(3, 7)].job_id == job_id


def test_backfill_never_duplicates(sapp: App, clock: FakeClock) -> None:
    declare(sapp, "b", catchup="skip")
    reconcile(sapp.runtime)
    clock.set(at(2, 1))
    leader_pass(sapp)  # 00:01 missed (late), 00:02 on time
    (j2,) = claim(sapp)
    finish(sapp, j2.id)
    leader_pass(sapp)
    assert statuses(sapp, "b") == {"missed": [at(1)], "succeeded": [at(2)]}
    counts = sapp.schedules.backfill("b", at(0), at(2))
    assert counts == {"new": 1, "rerun": 1, "already": 1}  # 00:00 new, 00:01 rerun
    assert statuses(sapp, "b")["pending"] == [at(0), at(1)]
    leader_pass(sapp)  # buffer_all: one at a time, oldest first
    assert [r.meta["fire_at"] for r in sapp.list_jobs(state="available")] == [iso_z(at(0))]
    (j0,) = claim(sapp)
    finish(sapp, j0.id)
    leader_pass(sapp)
    assert [r.meta["fire_at"] for r in sapp.list_jobs(state="available")] == [iso_z(at(1))]
    assert sapp.schedules.backfill("b", at(0), at(2)) == {"new": 0, "rerun": 0, "already": 3}
    assert len(sapp.list_jobs()) == 3
    with pytest.raises(ConfigurationError, match="before"):
        sapp.schedules.backfill("b", at(2), at(0))


def test_a_backfill_older_than_the_starting_deadline_runs(sapp: App, clock: FakeClock) -> None:
    """The deadline keeps the scheduler from starting stale runs of its own; occurrences
    a person asked for (a backfill of last week, a trigger) run however late they are."""
    declare(sapp, "nightly", "0 0 * * *", catchup="skip", starting_deadline=1800,
            expect_success_within=3600)
    reconcile(sapp.runtime)
    clock.set(T0 + timedelta(days=7, hours=12))
    leader_pass(sapp)
    counts = sapp.schedules.backfill("nightly", T0 + timedelta(days=1), T0 + timedelta(days=6))
    assert counts["new"] + counts["rerun"] == 6
    for _ in range(6):
        leader_pass(sapp)
        (job,) = claim(sapp)  # one at a time (buffer_all), none cancelled as late
        assert job.meta["kind"] == "backfill"
        clock.advance(3600)  # each takes an hour: the last starts 5 h after the backfill
        finish(sapp, job.id)
    leader_pass(sapp)
    backfilled = [r for r in runs(sapp, "nightly").values() if r.kind.value == "backfill"]
    assert len(backfilled) == 6 and {r.status.value for r in backfilled} == {"succeeded"}
    # nor does the dead-man switch judge them (they are last week's on purpose)
    assert {r.dms.value for r in backfilled} == {"none"}
    assert not sapp.list_jobs(state="cancelled")
    job_id = sapp.schedules.trigger("nightly")
    clock.advance(7200)  # a busy queue: the triggered run starts two hours later
    leader_pass(sapp)
    assert sapp.get_job(job_id).state is JobState.AVAILABLE


def test_a_job_made_for_an_occurrence_recorded_before_is_not_kept(sapp: App,
                                                                  clock: FakeClock) -> None:
    """The jobs of a batch are inserted before their occurrences; the occurrence's primary
    key still decides, and a job made for one recorded earlier is deleted before commit."""
    from shiftwork.model.schedule_values import RunKind
    from shiftwork.schedules.definition import Decision, Plan

    declare(sapp, "d")
    reconcile(sapp.runtime)
    clock.set(at(1, 1))
    assert leader_pass(sapp) == 1
    (job,) = claim(sapp)
    finish(sapp, job.id)  # its unique key is free again; the occurrence stays recorded
    leader_pass(sapp)

    def stale(defn: Any, snap: Any, now: datetime) -> Plan:  # decides 00:01 once more
        return Plan(new=[Decision(at(1), RunKind.CRON, RunStatus.ENQUEUED, None, at(1))])

    applied = schedules_of(sapp.store).apply("d", stale, insert=partial(insert_rows, sapp.runtime))
    assert applied.enqueued == [] and applied.written == []
    assert [j.id for j in sapp.list_jobs()] == [job.id]
    assert statuses(sapp, "d") == {"succeeded": [at(1)]}
    assert runs(sapp, "d")[at(1)].job_id == job.id
    # In a batch where only some occurrences are new: those get their jobs.
    declare(sapp, "e")
    reconcile(sapp.runtime)
    term = sapp.store.fleet.leader_acquire(LEADER_NAME, "test-leader", 3600)
    assert term is not None
    fired = dict(schedules_of(sapp.store).fire(["d", "e"], stale, "test-leader", term,
                                           insert=partial(insert_rows, sapp.runtime)))
    assert fired["d"].enqueued == []
    [(fire_at, e_job)] = fired["e"].enqueued
    assert fire_at == at(1) and runs(sapp, "e")[at(1)].job_id == e_job
    assert sorted(j.id for j in sapp.list_jobs()) == sorted([job.id, e_job])


# -- reconcile ----------------------------------------------------------------------------------


def test_reconcile_keeps_cursors_of_unchanged_schedules(make_app: Callable[..., App],
                                                        clock: FakeClock) -> None:
    a1 = make_app(clock=clock)
    declare(a1, "same", "*/5 * * * *")
    declare(a1, "retimed", "*/5 * * * *")
    declare(a1, "requeued", "*/5 * * * *")
    declare(a1, "gone", "*/5 * * * *")
    reconcile(a1.runtime)
    clock.set(at(12))
    a2 = make_app(clock=clock)  # a new deploy: one changed, one gone, one new
    declare(a2, "same", "*/5 * * * *")
    declare(a2, "retimed", "*/7 * * * *")
    declare(a2, "requeued", "*/5 * * * *", priority=5)
    declare(a2, "new", "*/5 * * * *")
    report = reconcile(a2.runtime)
    assert report == {"same": "unchanged", "retimed": "changed", "requeued": "changed",
                      "new": "created", "gone": "removed"}
    cursor = {i.name: i.next_fire_at for i in schedules_of(a2.store).overview()}
    assert cursor == {"same": at(5), "requeued": at(5), "retimed": at(14), "new": at(15)}
    assert "gone" not in schedules_of(a2.store).due()


# -- dead-man switch ----------------------------------------------------------------------------


def test_dead_man_switch_reports_late_and_alerts_once(sapp: App, clock: FakeClock) -> None:
    alerts: list[Any] = []
    sapp.on_schedule_late(alerts.append)
    declare(sapp, "dms", "*/10 * * * *", expect_success_within=120, overlap="allow_all")
    reconcile(sapp.runtime)
    clock.set(at(10, 1))
    leader_pass(sapp)
    (job,) = claim(sapp)
    finish(sapp, job.id, JobState.DEAD)  # the run fails
    clock.set(at(11, 59))
    leader_pass(sapp)
    assert alerts == [] and not schedules_of(sapp.store).get("dms").late()
    clock.set(at(12, 1))  # its window has passed without a success
    leader_pass(sapp)
    leader_pass(sapp)
    assert [(a.schedule, a.fire_at, a.status) for a in alerts] == [
        ("dms", at(10), RunStatus.FAILED)]
    assert schedules_of(sapp.store).get("dms").late()
    assert any("dms is late" in p for p in sapp.schedules.health())
    (status,) = sapp.observers.schedules_status()
    assert status.late and "no success within 120s" in status.reason
    # A second app (another leader) never alerts for it again.
    clock.set(at(12, 30))
    assert leader_pass(sapp, owner="test-leader") == 0 and len(alerts) == 1
    # The next run succeeds: no longer late.
    clock.set(at(20, 1))
    leader_pass(sapp)
    (nxt,) = claim(sapp)
    finish(sapp, nxt.id)
    leader_pass(sapp)
    assert not schedules_of(sapp.store).get("dms").late()
    assert sapp.schedules.health() == []


def test_pause_on_failure(sapp: App, clock: FakeClock) -> None:
    declare(sapp, "pf", pause_on_failure=True)
    reconcile(sapp.runtime)
    clock.set(at(1, 1))
    leader_pass(sapp)
    (job,) = claim(sapp)
    finish(sapp, job.id, JobState.DEAD)
    clock.set(at(1, 3))
    leader_pass(sapp)
    info = schedules_of(sapp.store).get("pf")
    assert info.paused and "paused on failure" in (info.paused_reason or "")
    assert any("paused on failure" in p for p in sapp.schedules.health())
    clock.set(at(3, 1))
    leader_pass(sapp)
    assert len(sapp.list_jobs()) == 1
