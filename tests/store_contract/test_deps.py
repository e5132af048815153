"""Dependencies, groups and finished jobs (store/deps.py), per store method."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

import pytest

from shiftwork import FakeClock
from shiftwork.composition.settling import insert_graph, sweep
from shiftwork.core.errors import DependencyError
from shiftwork.core.states import JobState
from shiftwork.store.base import Store

from .helpers import LEASE, claim, claim_one, done, insert, new_job, state


def test_a_dependent_is_not_claimable_until_its_parent_succeeds(store: Store) -> None:
    [a] = insert(store)
    results, _ = insert_graph(store.deps, [replace(new_job(), after=(a,))])
    b = results[0].id
    assert state(store, b) is JobState.SCHEDULED
    job = claim_one(store)
    assert job.id == a and claim(store) == []
    assert store.jobs.complete_many([done(job)]) == {a}
    assert state(store, b) is JobState.AVAILABLE
    assert [j.id for j in claim(store)] == [b]
    parents, _ = store.deps.links_of(b)
    assert [(p.job_id, p.resolved) for p in parents] == [(a, True)]
    assert store.deps.links_of(a)[1][0].job_id == b


@pytest.mark.parametrize("on_failure, expected", [("cancel", JobState.CANCELLED),
                                                  ("run", JobState.AVAILABLE)])
def test_a_dead_parent(store: Store, on_failure: str, expected: JobState) -> None:
    [a] = insert(store)
    b = insert_graph(store.deps, [replace(new_job(), after=(a,), on_failure=on_failure)]
                                )[0][0].id
    store.jobs.complete_many([done(claim_one(store), JobState.DEAD)])
    assert state(store, b) is expected


def test_new_parents_in_one_insert_and_a_cancel_runs_down(store: Store) -> None:
    rows = [new_job(), replace(new_job(), after_new=(0,)), replace(new_job(), after_new=(1,))]
    ids = [r.id for r in insert_graph(store.deps, rows)[0]]
    store.jobs.cancel(ids[0])
    assert [state(store, i) for i in ids] == [JobState.CANCELLED] * 3


def test_an_unknown_parent_writes_nothing(store: Store) -> None:
    with pytest.raises(DependencyError, match="no job with id 4242"):
        insert_graph(store.deps, [new_job(), replace(new_job(), after=(4242,))])
    assert store.jobs.list() == []


def test_groups_and_their_callback(store: Store) -> None:
    results, group = insert_graph(store.deps, [new_job(), new_job()], group=True)
    assert group is not None
    members = [r.id for r in results]
    cb = insert_graph(store.deps, [replace(new_job(), on_failure="run")],
                                 callback_of=group)[0][0].id
    with pytest.raises(DependencyError, match="already has a callback"):
        insert_graph(store.deps, [new_job()], callback_of=group)
    assert state(store, cb) is JobState.SCHEDULED
    assert store.deps.links_of(cb) == ([], [])  # it waits for the group: no edges
    jobs = {j.id: j for j in claim(store)}
    assert set(jobs) == set(members)
    store.jobs.complete_many([done(jobs[members[0]], result_json='"x"'),
                              done(jobs[members[1]], JobState.DEAD)])
    info = store.deps.group_get(group)
    assert (info.done, info.failed, info.total, info.callback_id) == (1, 1, 2, cb)
    assert state(store, cb) is JobState.AVAILABLE
    assert store.deps.groups_of_job(cb) == ([], group)
    assert store.deps.group_members(group) == members
    res = store.deps.group_results(group)
    assert res[0] is not None and res[0].result == "x"


def test_members_finished_at_the_same_instant_release_the_callback_once(
        store: Store) -> None:
    """Eight completers, each finishing its share of the members at once: the group's
    count reaches zero once and the callback is made available once."""
    n = 64
    results, group = insert_graph(store.deps, [new_job() for _ in range(n)] + [new_job()],
                                             group=True, with_callback=True)
    assert group is not None
    cb = results[-1].id
    jobs = claim(store, limit=n)
    assert len(jobs) == n and cb not in {j.id for j in jobs}
    start = threading.Barrier(8)

    def complete(share: list[Any]) -> None:
        start.wait()
        for job in share:
            store.jobs.complete_many([done(job)])

    threads = [threading.Thread(target=complete, args=(jobs[i::8],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    info = store.deps.group_get(group)
    assert (info.done, info.failed, info.total) == (n, 0, n)
    assert [j.id for j in claim(store)] == [cb]
    assert store.jobs.get(cb).errors == []


def test_a_failed_member_cancels_a_cancel_on_failure_callback_at_once(store: Store) -> None:
    results, group = insert_graph(store.deps,
        [new_job(), new_job(), replace(new_job(), on_failure="cancel")],
        group=True, with_callback=True)
    cb = results[-1].id
    first, _ = claim(store, limit=2)
    store.jobs.complete_many([done(first, JobState.DEAD)])
    assert state(store, cb) is JobState.CANCELLED  # the other member still runs
    assert f"a member of group {group} did not succeed" in \
        store.jobs.get(cb).errors[-1]["message"]


def test_a_member_rescued_as_dead_is_counted_by_the_sweep(store: Store,
                                                          clock: FakeClock) -> None:
    results, group = insert_graph(store.deps,
        [new_job(max_attempts=1), replace(new_job(), on_failure="run")],
        group=True, with_callback=True)
    member, cb = results[0].id, results[1].id
    claim_one(store)
    clock.advance(LEASE + 1)
    [rescued] = store.jobs.rescue()  # the rescuer's own resolve is what a crash skips
    assert rescued.id == member and rescued.state is JobState.DEAD
    assert state(store, cb) is JobState.SCHEDULED
    assert sweep(store.deps) == 1
    assert state(store, cb) is JobState.AVAILABLE
    assert store.deps.group_get(group).failed == 1
    assert sweep(store.deps) == 0


def test_watch_and_finished(store: Store) -> None:
    [a, b] = insert(store, 2)
    finished, missing = store.deps.watch_jobs([a, 999])
    assert finished == [] and missing == [999]
    job = claim(store, limit=1)[0]
    store.jobs.complete_many([done(job, result_json="[1]")])
    [f] = store.deps.finished([a, b])
    assert (f.id, f.state, f.result) == (job.id, JobState.SUCCEEDED, [1])


def test_sweep_resolves_edges_left_open(store: Store) -> None:
    [a] = insert(store)
    b = insert_graph(store.deps, [replace(new_job(), after=(a,))])[0][0].id
    store.jobs.cancel(a)  # resolves at once; a second pass finds nothing
    assert state(store, b) is JobState.CANCELLED
    assert sweep(store.deps) == 0
