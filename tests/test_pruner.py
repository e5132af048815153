"""Retention: the leader's pruner deletes what is past its retention, in one pass."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from shiftwork import App, JobState

from .conftest import FAST, running_worker, wait_for


def test_the_leader_prunes_finished_jobs_and_old_minutes(make_app: Callable[..., App]) -> None:
    app = make_app(settings=dataclasses.replace(
        FAST, prune_interval=0.5, retention_finished=0.5, retention_dead=3600))

    @app.task(max_attempts=1)
    def work(fail: bool) -> None:
        if fail:
            raise ValueError("kept: dead jobs have their own retention")

    ok = [work.enqueue(False).id for _ in range(3)]
    dead = work.enqueue(True).id
    with running_worker(app):
        wait_for(lambda: app.get_job(dead).state is JobState.DEAD, what="the failure")
        wait_for(lambda: not app.list_jobs(state="succeeded"), timeout=15,
                 what="succeeded jobs pruned past their retention")
    assert app.list_jobs(state="dead")[0].id == dead
    assert all(j.id not in ok for j in app.list_jobs(limit=100))


def test_a_group_is_pruned_once_all_its_jobs_are(make_app: Callable[..., App]) -> None:
    app = make_app(settings=dataclasses.replace(
        FAST, prune_interval=0.5, retention_finished=0.5, retention_dead=0.5))

    @app.task
    def member(i: int) -> int:
        return i

    @app.task
    def total(results: list[int]) -> int:
        return sum(results)

    done = app.group((member.call(i) for i in range(3)), then=total.call())
    waiting = app.group([member.using(delay=3600).call(9)])  # a member not finished: kept
    assert done.callback is not None
    with running_worker(app):
        assert done.callback.result(timeout=30) == 3
        wait_for(lambda: app.store.deps.group_members(done.id) == [], timeout=15,
                 what="the members pruned")
        wait_for(lambda: _gone(app, done.id), timeout=15, what="the group pruned")
    assert app.store.deps.group_get(waiting.id).total == 1


def _gone(app: App, group_id: int) -> bool:
    from shiftwork.core.errors import JobNotFoundError

    try:
        app.store.deps.group_get(group_id)
    except JobNotFoundError:
        return True
    return False
