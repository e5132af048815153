"""Composition under crashes, with real worker processes killed by SIGKILL: a group's
callback runs once after every member, a chain survives a kill at every link, and a
dependent of a job that died (its worker killed, its attempts spent) is cancelled."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from shiftwork import JobCancelled, JobState

from .conftest import imported_app, spawn_worker, wait_for

pytestmark = pytest.mark.chaos


@pytest.fixture
def comp(db: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with imported_app(monkeypatch, "composed", db["dsn"], db["schema"]) as module:
        module.create_effects_table()
        yield module


def kill(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def test_group_callback_runs_once_after_every_member_despite_two_kills(
        comp: Any, db: dict[str, str]) -> None:
    app, total = comp.app, 1000
    g = app.group(comp.member.call(i, 0.004) for i in range(total))
    cb = g.then(comp.callback.call("album"))
    procs = [spawn_worker(db, "composed", ["work=8"]), spawn_worker(db, "composed", ["work=8"])]
    try:
        for threshold in (200, 500):  # kill one worker at each point, start another
            wait_for(lambda t=threshold: g.progress().done >= t, timeout=120,  # type: ignore[misc]
                     what=f"{threshold} members done")
            victim = procs[0]
            wait_for(lambda v=victim: any(e[2] == v.pid for e in comp.effects()),  # type: ignore[misc]
                     what="the victim ran members")
            kill(victim)
            procs = [*procs[1:], spawn_worker(db, "composed", ["work=8"])]
        assert cb.result(timeout=180) == sum(range(total))
    finally:
        stop(procs)
    runs = [e for e in comp.effects() if e[3] == "callback"]
    assert len(runs) == 1, runs
    progress = g.progress()
    assert (progress.done, progress.failed, progress.total) == (total, 0, total)
    started = app.get_job(cb.id).attempted_at
    assert all(app.get_job(j.id).finished_at <= started for j in g.jobs)
    rescued = [j for j in (app.get_job(m.id) for m in g.jobs)
               if any(e["kind"] == "lease_expired" for e in j.errors)]
    assert rescued, "the kills hit members in flight"


def test_chain_survives_a_kill_at_every_link(comp: Any, db: dict[str, str]) -> None:
    chain = comp.app.chain(comp.link.call(1, 1.0), comp.link.call(10, 1.0),
                           comp.link.call(100, 1.0))
    proc = spawn_worker(db, "composed", ["work=2"])
    procs = [proc]
    try:
        for job in chain.jobs:
            wait_for(lambda j=job: any(e[0] == j.id for e in comp.effects()),  # type: ignore[misc]
                     timeout=60, what=f"link {job.id} started")
            kill(procs[-1])
            procs.append(spawn_worker(db, "composed", ["work=2"]))
        assert chain.result(timeout=120) == 111
    finally:
        stop(procs)
    runs = comp.effects()
    for job in chain.jobs:  # each link killed once, then run again to the end
        assert [e[1] for e in runs if e[0] == job.id] == [1, 2]
    jobs = [comp.app.get_job(j.id) for j in chain.jobs]
    assert all(j.state is JobState.SUCCEEDED for j in jobs)
    assert jobs[0].finished_at <= jobs[1].attempted_at
    assert jobs[1].finished_at <= jobs[2].attempted_at


def test_after_a_job_that_died_with_its_worker_cancels_the_dependent(
        comp: Any, db: dict[str, str]) -> None:
    doomed = comp.once.enqueue(30.0)  # max_attempts=1: rescued from a dead worker as dead
    dependent = comp.member.using(after=[doomed]).enqueue(1)
    anyway = comp.member.using(after=[doomed], on_failure="run").enqueue(2)
    proc = spawn_worker(db, "composed", ["work=2"])
    procs = [proc]
    try:
        wait_for(lambda: any(e[0] == doomed.id for e in comp.effects()), what="doomed started")
        kill(proc)
        procs.append(spawn_worker(db, "composed", ["work=2"]))
        with pytest.raises(JobCancelled):
            dependent.result(timeout=60)
        assert anyway.result(timeout=60) == 2
    finally:
        stop(procs)
    assert comp.app.get_job(doomed.id).state is JobState.DEAD
    assert not any(e[0] == dependent.id for e in comp.effects())
    assert comp.app.get_job(dependent.id).errors[-1]["type"] == "DependencyFailed"


def test_a_member_that_died_with_its_worker_is_counted_into_its_group(
        comp: Any, db: dict[str, str]) -> None:
    """A member on its last attempt when its worker is killed is rescued as dead: the
    rescue counts it into its group (not the completion, which never came), so the
    group's callback still runs once, and a cancel-on-failure callback is cancelled."""
    app = comp.app
    g = app.group([comp.once.call(30.0), comp.member.call(5)])
    cb = g.then(comp.callback.call("kept"))
    strict = app.group([comp.once.call(30.0)])
    cancelled = strict.then(comp.callback.call("never"), on_failure="cancel")
    proc = spawn_worker(db, "composed", ["work=4"])
    procs = [proc]
    try:
        wait_for(lambda: {e[0] for e in comp.effects() if e[3] == "once"} ==
                 {g.jobs[0].id, strict.jobs[0].id}, what="both doomed members started")
        kill(proc)
        procs.append(spawn_worker(db, "composed", ["work=4"]))
        assert cb.result(timeout=60) == 5
        with pytest.raises(JobCancelled):
            cancelled.result(timeout=60)
    finally:
        stop(procs)
    assert app.get_job(g.jobs[0].id).state is JobState.DEAD
    assert (g.progress().done, g.progress().failed) == (1, 1)
    assert len([e for e in comp.effects() if e[3] == "callback"]) == 1
