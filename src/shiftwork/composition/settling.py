"""What the jobs of a graph wait for, and their settling: composition's decisions, run
on the store's dependency statements (``store.deps``, store/deps.py's DepsStatements).

How it is stored: an edge per dependency (``job_deps``); the dependent waits as
'scheduled' at ``DEPS_WAIT`` with ``deps_pending`` counting its open edges, so the claim
never sees it. A parent is ``watched``; its completion takes its edges once each and
counts its dependents down (the store does that in the completion's own transaction, or
the next statement on Postgres). A group's callback waits for the group as one
dependency, not for an edge per member. The leader's sweep (:func:`sweep`) closes edges
a crash left, counts members left uncounted and settles groups left due.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from shiftwork.core.errors import DependencyError
from shiftwork.core.states import FINAL
from shiftwork.model.new_job import DEPS_WAIT, NO_MARK, Mark, NewJob
from shiftwork.model.records import EnqueueResult
from shiftwork.store.base import DepsStatements

_FINAL = {s.value for s in FINAL}


@contextmanager
def _in_transaction(deps: DepsStatements, conn: Any) -> Iterator[Any]:
    if conn is not None:
        yield conn
    else:
        with deps.transaction() as c:
            yield c


def insert_graph(deps: DepsStatements, jobs: list[NewJob], conn: Any = None, *,
                 group: bool = False, callback_of: int | None = None,
                 with_callback: bool = False) -> tuple[list[EnqueueResult], int | None]:
    """Insert jobs with their dependencies in one transaction; returns their results
    and, with ``group``, the new group's id (its members: all of ``jobs``, or all but
    the last with ``with_callback``: the last is then the group's callback).

    ``callback_of``: the last job is that group's callback (at most one per group).
    A callback waits for its group as one dependency (its ``on_failure`` says what
    a failed member does to it, see ``Group.then``), not for an edge per member.
    A parent that does not exist raises DependencyError and nothing is written.
    """
    if any(j.dedup is not None and j.dedup.debounce is not None for j in jobs):
        raise DependencyError("debounce cannot be used in a group, a chain or a graph: a "
                              "debounced job is moved by each enqueue of its key, and "
                              "what it waits for or what waits for it would not move")
    with _in_transaction(deps, conn) as c:
        existing = sorted({p for j in jobs for p in j.after})
        states: dict[int, str] = {}
        if existing:
            states = deps.watch(c, existing)
            missing = [p for p in existing if p not in states]
            if missing:
                raise DependencyError(
                    f"after=: no job with id {', '.join(map(str, missing))} (never "
                    "enqueued, or finished and pruned); nothing was enqueued")
        members = (len(jobs) - 1 if with_callback else len(jobs)) if group else 0
        group_id: int | None = None
        if group:
            group_id = deps.group_insert(c, members)
            if with_callback:
                callback_of = group_id
        callback = callback_of is not None
        linked = [i for i, j in enumerate(jobs) if j.after or j.after_new]
        new_parents = {k for i in linked for k in jobs[i].after_new}
        # Most rows of a group have no links: one shared mark, the row as it is.
        marks = [Mark(0, False, group_id)] * members + [NO_MARK] * (len(jobs) - members)
        for i in sorted({*linked, *new_parents}):
            j = jobs[i]
            marks[i] = Mark(len(set(j.after)) + len(set(j.after_new)), i in new_parents,
                            group_id if i < members else None)
        if callback:  # the last row waits for the group
            marks[-1] = marks[-1]._replace(deps_pending=marks[-1].deps_pending + 1)
        rows = [replace(j, run_at=DEPS_WAIT) if m.deps_pending else j  # they wait
                for j, m in zip(jobs, marks, strict=True)]
        results = deps.insert_marked(c, rows, marks)
        ids = [r.id for r in results]
        if members and not all(r.created for r in results[:members]):
            raise DependencyError("a job with the unique key of a group member is already "
                                  "waiting; a group needs new jobs")
        edges: list[tuple[int, int, str]] = []
        for i in linked:
            j = jobs[i]
            parents = list(dict.fromkeys([*j.after, *(ids[k] for k in j.after_new)]))
            if not results[i].created:
                raise DependencyError(f"job {ids[i]}: a job with its unique key is already "
                                      "waiting; dependencies need a new job")
            edges += [(ids[i], p, j.on_failure) for p in parents]
        if callback and not results[-1].created:
            raise DependencyError(f"job {ids[-1]}: a job with its unique key is already "
                                  "waiting; a group's callback needs a new job")
        if edges:
            deps.link(c, edges)
        if callback:
            assert callback_of is not None
            set_ = deps.set_callback(c, callback_of, ids[-1], jobs[-1].on_failure)
            if set_ is None:
                raise DependencyError(
                    f"group {callback_of} already has a callback (or does not exist); "
                    "a group's callback is set once")
            if set_[1]:  # its members finished already (or one failed: "cancel")
                deps.settle_groups(c, [set_[0]])
        finished = [p for p, s in states.items() if s in _FINAL]
        if finished:  # parents that finished before this enqueue: resolve now
            deps.resolve(c, finished)
    return results, group_id


def resolve(deps: DepsStatements, parent_ids: list[int]) -> None:
    """Resolve the dependents of finished jobs (idempotent: an edge counts once)."""
    if parent_ids:
        with deps.transaction() as c:
            deps.resolve(c, parent_ids)


def sweep(deps: DepsStatements, limit: int = 1000) -> int:
    """Resolve edges whose parent finished but were left open (a crash between a
    completion and its resolution, a rescue to dead, a cancel elsewhere), count the
    group members left uncounted and settle the groups left due; how many of those."""
    with deps.transaction() as c:
        parents = deps.sweep_parents(c, limit)
        if parents:
            deps.resolve(c, parents)
        members, groups = deps.sweep_groups(c, limit)
        if members:
            deps.resolve(c, members)
        if groups:
            deps.settle_groups(c, groups)
    return len(parents) + len(members) + len(groups)
