"""Dependencies, groups and finished jobs (store/deps.py), per store method."""

from __future__ import annotations

from dataclasses import replace

import pytest

from shiftwork.errors import DependencyError
from shiftwork.states import JobState
from shiftwork.store.base import Store

from .helpers import claim, claim_one, done, insert, new_job, state


def test_a_dependent_is_not_claimable_until_its_parent_succeeds(store: Store) -> None:
    [a] = insert(store)
    results, _ = store.jobs_insert_graph([replace(new_job(), after=(a,))])
    b = results[0].id
    assert state(store, b) is JobState.SCHEDULED
    job = claim_one(store)
    assert job.id == a and claim(store) == []
    assert store.jobs_complete_many([done(job)]) == {a}
    assert state(store, b) is JobState.AVAILABLE
    assert [j.id for j in claim(store)] == [b]
    parents, _ = store.jobs_dependencies(b)
    assert [(p.job_id, p.resolved) for p in parents] == [(a, True)]
    assert store.jobs_dependencies(a)[1][0].job_id == b


@pytest.mark.parametrize("on_failure, expected", [("cancel", JobState.CANCELLED),
                                                  ("run", JobState.AVAILABLE)])
def test_a_dead_parent(store: Store, on_failure: str, expected: JobState) -> None:
    [a] = insert(store)
    b = store.jobs_insert_graph([replace(new_job(), after=(a,), on_failure=on_failure)]
                                )[0][0].id
    store.jobs_complete_many([done(claim_one(store), JobState.DEAD)])
    assert state(store, b) is expected


def test_new_parents_in_one_insert_and_a_cancel_runs_down(store: Store) -> None:
    rows = [new_job(), replace(new_job(), after_new=(0,)), replace(new_job(), after_new=(1,))]
    ids = [r.id for r in store.jobs_insert_graph(rows)[0]]
    store.jobs_cancel(ids[0])
    assert [state(store, i) for i in ids] == [JobState.CANCELLED] * 3


def test_an_unknown_parent_writes_nothing(store: Store) -> None:
    with pytest.raises(DependencyError, match="no job with id 4242"):
        store.jobs_insert_graph([new_job(), replace(new_job(), after=(4242,))])
    assert store.jobs_list() == []


def test_groups_and_their_callback(store: Store) -> None:
    results, group = store.jobs_insert_graph([new_job(), new_job()], group=True)
    assert group is not None
    members = [r.id for r in results]
    cb = store.jobs_insert_graph([replace(new_job(), after=tuple(members), on_failure="run")],
                                 callback_of=group)[0][0].id
    with pytest.raises(DependencyError, match="already has a callback"):
        store.jobs_insert_graph([replace(new_job(), after=tuple(members))], callback_of=group)
    jobs = {j.id: j for j in claim(store)}
    assert set(jobs) == set(members)
    store.jobs_complete_many([done(jobs[members[0]], result_json='"x"'),
                              done(jobs[members[1]], JobState.DEAD)])
    info = store.groups_get(group)
    assert (info.done, info.failed, info.total, info.callback_id) == (1, 1, 2, cb)
    assert state(store, cb) is JobState.AVAILABLE
    assert store.groups_of_job(cb) == ([], group)
    assert store.groups_members(group) == members
    res = store.groups_results(group)
    assert res[0] is not None and res[0].result == "x"


def test_watch_and_finished(store: Store) -> None:
    [a, b] = insert(store, 2)
    finished, missing = store.jobs_watch([a, 999])
    assert finished == [] and missing == [999]
    job = claim(store, limit=1)[0]
    store.jobs_complete_many([done(job, result_json="[1]")])
    [f] = store.jobs_finished([a, b])
    assert (f.id, f.state, f.result) == (job.id, JobState.SUCCEEDED, [1])


def test_sweep_resolves_edges_left_open(store: Store) -> None:
    [a] = insert(store)
    b = store.jobs_insert_graph([replace(new_job(), after=(a,))])[0][0].id
    store.jobs_cancel(a)  # resolves at once; a second pass finds nothing
    assert state(store, b) is JobState.CANCELLED
    assert store.deps_sweep() == 0
