"""The operations console's store methods (issue 29): filters combined, keyset pages,
the bounded count, and the batches of bulk actions; on both engines."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from shiftwork import FakeClock
from shiftwork.composition.settling import insert_graph
from shiftwork.core.states import JobState
from shiftwork.model.filter import JobFilter, parse_filter
from shiftwork.store.base import Store

from .helpers import claim_one, done, insert, new_job, state


def _dead(store: Store, count: int, message: str = "timeout talking to bank",
          **kwargs: object) -> list[int]:
    ids = insert(store, count, max_attempts=1, **kwargs)
    queue = str(kwargs.get("queue", "q"))
    for _ in ids:
        job = claim_one(store, queue)
        store.jobs.complete_many([done(job, JobState.DEAD, error={
            "type": "BankError", "message": message, "kind": "error"})])
    return ids


def test_filters_combine_and_task_is_a_substring_in_any_case(store: Store) -> None:
    billing = _dead(store, 3, task="dashapp.charge_customer", queue="billing")
    _dead(store, 1, message="card declined", task="dashapp.charge_customer", queue="billing")
    insert(store, 2, task="dashapp.charge_customer", queue="billing")  # waiting
    insert(store, 1, task="other", queue="billing")
    f = parse_filter({"state": "dead", "queue": "billing", "task": "CHARGE_customer",
                      "error": "timeout"})
    assert [j.id for j in store.console.page(f)] == billing[::-1]
    assert store.console.count_upto(f, 100) == 3
    assert store.console.count_upto(parse_filter({"queue": "billing"}), 4) == 4  # capped
    # a LIKE wildcard in the text is literal
    assert store.console.page(parse_filter({"task": "charge%"})) == []
    # _ literal: "charge_customer"
    assert len(store.console.page(parse_filter({"task": "e_c"}))) == 6
    assert store.console.page(parse_filter({"task": "ex_c"})) == []


def test_states_combine_and_waiting_is_available(store: Store, clock: FakeClock) -> None:
    """"waiting" is what `queues` and the dashboard count so: due and not yet claimed."""
    [running] = insert(store)
    [later] = insert(store, run_at=clock.now() + timedelta(hours=1))
    [due] = insert(store)
    claim_one(store)  # the oldest: `running`
    assert [j.id for j in store.console.page(parse_filter({"state": "waiting"}))] == [due]
    assert [j.id for j in store.console.page(parse_filter({"state": "scheduled,running"}))
            ] == [later, running]
    assert state(store, running) is JobState.RUNNING


def test_keyset_pages_cover_every_job_once_in_each_sort(store: Store,
                                                        clock: FakeClock) -> None:
    ids = []
    for i in range(7):
        ids += insert(store, run_at=clock.now() + timedelta(minutes=(i * 3) % 7))
    for sort in ("created", "run_at"):
        seen: list[int] = []
        after = None
        while True:
            page = store.console.page(JobFilter(), sort=sort, after=after, limit=3)
            if not page:
                break
            seen += [j.id for j in page]
            after = page[-1].id
        assert sorted(seen) == sorted(ids) and len(seen) == len(ids), sort
        if sort == "run_at":
            runs = [store.jobs.get(i).run_at for i in seen]
            assert runs == sorted(runs, reverse=True)


def test_sort_by_finished_lists_finished_jobs_only(store: Store, clock: FakeClock) -> None:
    dead = _dead(store, 2)
    insert(store)
    assert [j.id for j in store.console.page(JobFilter(), sort="finished")] == dead[::-1]


def test_time_range_unique_key_and_id(store: Store, clock: FakeClock) -> None:
    [old] = insert(store)
    clock.advance(3600)
    [new] = insert(store, unique_key="invoice:7")
    cut = clock.now() - timedelta(minutes=30)
    assert [j.id for j in store.console.page(JobFilter(created_from=cut))] == [new]
    assert [j.id for j in store.console.page(JobFilter(created_to=cut))] == [old]
    assert [j.id for j in store.console.page(JobFilter(unique_key="invoice:7"))] == [new]
    assert [j.id for j in store.console.page(JobFilter(id=old))] == [old]


def test_match_ids_batches_and_the_batch_actions(store: Store) -> None:
    dead = _dead(store, 5)
    [waiting] = insert(store)
    f = JobFilter(states=(JobState.DEAD,))
    assert store.console.match_ids(f, None, 2) == dead[:2]
    assert store.console.match_ids(f, dead[1], 10) == dead[2:]
    assert store.console.retry_batch([*dead[:2], waiting]) == dead[:2]  # waiting: not moved
    assert [state(store, i) for i in dead[:2]] == [JobState.AVAILABLE] * 2
    assert store.console.delete_finished([*dead, waiting]) == dead[2:]  # finished ones only
    assert store.console.count_upto(JobFilter(), 100) == 3


def test_a_cancel_batch_cancels_waiting_asks_running_and_resolves_dependents(
        store: Store) -> None:
    """One transaction for a batch: waiting jobs cancelled (a dependent's parents
    resolved, so a cancel runs down its chain), running ones asked to stop, finished ones
    and unknown ids left alone."""
    [running] = insert(store)
    claim_one(store)
    [finished] = _dead(store, 1)
    [parent] = insert(store)
    child = insert_graph(store.deps, [replace(new_job(), after=(parent,))])[0][0].id
    [other] = insert(store, meta={"note": "x"})
    batch = store.console.cancel_batch([running, finished, parent, other, 4242])
    assert [i for i, _ in batch.cancelled] == [parent, other]
    assert dict(batch.cancelled)[other] == {"note": "x"}
    assert batch.asked == [running]
    assert [state(store, i) for i in (parent, child, other)] == [JobState.CANCELLED] * 3
    assert state(store, running) is JobState.RUNNING
    assert store.jobs.get(running).cancel_requested
    assert state(store, finished) is JobState.DEAD
    assert store.console.cancel_batch([]).cancelled == []


def test_a_retry_batch_leaves_a_job_whose_key_is_taken(store: Store) -> None:
    [blocked] = _dead(store, 1, unique_key="k")
    [free] = _dead(store, 1)
    insert(store, unique_key="k")  # a live job holds the key now
    assert store.console.retry_batch([blocked, free]) == [free]
    assert state(store, blocked) is JobState.DEAD


def test_bulk_actions_audit_is_newest_first_and_pruned(store: Store) -> None:
    for n in range(4):
        store.console.bulk_actions_add("alice", "retry", f"state=dead n={n}", n, n)
    store.console.bulk_actions_prune(2)
    rows = store.console.bulk_actions_list()
    assert [(r.who, r.action, r.filter, r.matched) for r in rows] == [
        ("alice", "retry", "state=dead n=3", 3), ("alice", "retry", "state=dead n=2", 2)]
