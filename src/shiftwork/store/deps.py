"""The dependency statements, written once: what composition/settling.py runs to write a
graph, resolve finished parents and sweep (``store.deps``, :class:`DepsSql`), and
the reads of groups and finished jobs; and the resolve cascade (:class:`Cascade`) a
completion runs in its own transaction. Each engine supplies its statements
(``deps.sql``), its core's ``_rows`` and the cascade's steps (``<engine>/deps.py``);
nothing here knows which engine runs it. The
decisions (what each job of a graph waits for, which ids are missing, what a callback
needs) are composition/settling.py's.

How it is stored: an edge per dependency (``job_deps``); the dependent waits as
'scheduled' at ``DEPS_WAIT`` with ``deps_pending`` counting its open edges, so the claim
never sees it. A parent is ``watched``; its completion (the same transaction on SQLite,
the next statement on Postgres, whose completion statement returns the flag) takes its
edges once each and counts its dependents down: available at zero, cancelled after a
failed parent unless ``on_failure="run"``. The leader's sweep closes edges a crash left.

A group is a row counting its members not finished (``pending``) and failed; each
member names it (``jobs.group_id``, in order by id). Its callback waits for the group as
one dependency, not for an edge per member. A member's finish is counted once
(``group_mark`` 1 -> counted): by the Postgres completion statement itself, or here for
a finish elsewhere (SQLite's completion, a rescue to dead, a cancel, the sweep). The
count that makes a group due (all finished; or one failed, callback ``on_failure=
"cancel"``) is followed by its settling, once (``settled_at``): the callback made
available or cancelled.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from shiftwork.core.errors import JobNotFoundError
from shiftwork.core.states import FINAL, JobState
from shiftwork.model.new_job import Mark, NewJob
from shiftwork.model.records import DepLink, EnqueueResult, FinishedJob, GroupInfo
from shiftwork.store.core import EngineCore

Row = Sequence[Any]
_FINAL = {s.value for s in FINAL}


class MarkedInsert(Protocol):
    """What the dependency statements use of ``store.jobs``."""

    def insert_marked(self, c: Any, jobs: list[NewJob], marks: list[Mark]
                      ) -> list[EnqueueResult]: ...


class Cascade:
    """The resolve cascade on a caller's connection: a finished parent's dependents and
    its groups' counts, down a chain of cancels. A completion runs it in its own
    transaction (SQLite) or on its own connection (PostgreSQL), in ``store.jobs``; a
    cancel and composition's resolve and sweep (``store.deps``) on theirs. Each engine's
    subclass (``<engine>/deps.py``) supplies the steps."""

    def __init__(self, core: EngineCore) -> None:
        self._rows = core._rows

    def _resolve_step(self, c: Any, parent_ids: list[int],
                      finished: bool = False) -> list[Row]:
        """Take the finished parents' open edges and count their dependents down; returns
        (id, state, watched) of each dependent changed. ``finished``: the parents just
        finished (a completion), so waiters on them are woken too (where that is needed)."""
        raise NotImplementedError

    def _groups_count_step(self, c: Any, job_ids: list[int]) -> list[int]:
        """Count the finished, uncounted group members among ``job_ids`` into their
        groups (once each); the groups whose callback may now be due."""
        return [int(r[0]) for r in self._rows(c, "groups_count", ids=job_ids) if r[1]]

    def _groups_settle_step(self, c: Any, group_ids: list[int]) -> list[Row]:
        """Make the due groups' callbacks available (or cancel them); (id, state,
        watched) of each callback moved."""
        return [r for r in self._rows(c, "groups_settle", ids=group_ids) if r[0] is not None]

    def settle_groups(self, c: Any, group_ids: list[int]) -> None:
        """Release (or cancel) the callbacks of these due groups, on ``c``."""
        cancelled = [int(r[0]) for r in self._groups_settle_step(c, sorted(set(group_ids)))
                     if r[1] == JobState.CANCELLED.value and r[2]]
        self.resolve(c, cancelled)  # a cancelled callback's own dependents

    def resolve(self, c: Any, parent_ids: list[int], finished: bool = False) -> None:
        """Resolve finished parents on ``c``: their dependents' edges, and their groups'
        counts; a dependent (or callback) cancelled in turn is resolved next (a cancel
        runs down a chain)."""
        while parent_ids:
            changed = self._resolve_step(c, parent_ids, finished)
            due = self._groups_count_step(c, parent_ids)
            if due:
                changed += self._groups_settle_step(c, due)
            finished = False
            parent_ids = [int(r[0]) for r in changed
                          if r[1] == JobState.CANCELLED.value and r[2]]


class DepsSql:
    """The statements composition/settling.py runs, each on the caller's connection
    ``c`` (in :meth:`transaction`): named for what they write, deciding nothing."""

    def __init__(self, core: EngineCore, cascade: Cascade, jobs: MarkedInsert) -> None:
        self._e = core
        self._cascade = cascade
        self._jobs = jobs  # store.jobs: a graph's rows are written by the jobs' insert

    def _decode(self, value: Any) -> Any:
        """A JSON column as the engine returns it (text here; see the queries)."""
        return None if value is None else json.loads(value)

    def transaction(self) -> AbstractContextManager[Any]:
        return self._e.transaction()

    def watch(self, c: Any, ids: list[int]) -> dict[int, str]:
        """Mark jobs as watched; the state of each that exists."""
        return {int(r[0]): r[1] for r in self._e._rows(c, "deps_watch", ids=ids)}

    def group_insert(self, c: Any, members: int) -> int:
        """A new group of ``members`` jobs; its id."""
        return int(self._e._rows(c, "groups_insert", total=members)[0][0])

    def insert_marked(self, c: Any, jobs: list[NewJob], marks: list[Mark]
                      ) -> list[EnqueueResult]:
        return self._jobs.insert_marked(c, jobs, marks)

    def link(self, c: Any, edges: list[tuple[int, int, str]]) -> None:
        """Write the edges (dependent, parent, on_failure)."""
        self._e._rows(c, "deps_link", jobs=[e[0] for e in edges],
                      parents=[e[1] for e in edges], on_failure=[e[2] for e in edges],
                      edges=edges)

    def set_callback(self, c: Any, group: int, callback: int, on_failure: str
                     ) -> tuple[int, bool] | None:
        """Make ``callback`` the group's (once); (group id, whether it is due already),
        None if the group has one or does not exist."""
        rows = self._e._rows(c, "groups_set_callback", group=group, callback=callback,
                             on_failure=on_failure)
        return (int(rows[0][0]), bool(rows[0][1])) if rows else None

    def resolve(self, c: Any, parent_ids: list[int]) -> None:
        """Resolve finished parents: their dependents' edges and their groups' counts,
        down a chain of cancels."""
        self._cascade.resolve(c, parent_ids)

    def settle_groups(self, c: Any, group_ids: list[int]) -> None:
        """Release (or cancel) the callbacks of these due groups."""
        self._cascade.settle_groups(c, group_ids)

    def sweep_parents(self, c: Any, limit: int) -> list[int]:
        """Finished parents with edges left open."""
        return [int(r[0]) for r in self._e._rows(c, "deps_sweep", limit=limit)]

    def sweep_groups(self, c: Any, limit: int) -> tuple[list[int], list[int]]:
        """Group members finished but not counted, and groups due but not settled."""
        left = self._e._rows(c, "groups_sweep", limit=limit)
        return ([int(r[1]) for r in left if r[0] == "member"],
                [int(r[1]) for r in left if r[0] == "group"])

    # -- reads: groups, finished jobs, links ---------------------------------------

    def groups_prune(self, older_than: float, limit: int = 10_000) -> int:
        """Delete groups older than ``older_than`` seconds whose jobs were all pruned;
        how many."""
        with self._e.transaction() as c:
            return len(self._e._rows(c, "groups_prune", older=older_than, limit=limit))

    # -- waiting on results ------------------------------------------------------------

    def _finished(self, rows: list[Row]) -> list[FinishedJob]:
        return [FinishedJob(int(r[0]), JobState(r[1]), self._decode(r[2]), self._decode(r[3]))
                for r in rows]

    def watch_jobs(self, ids: list[int]) -> tuple[list[FinishedJob], list[int]]:
        """Mark jobs as waited on (their completion notifies); returns those already
        finished and the ids that name no job."""
        with self._e.transaction() as c:
            found = {int(r[0]) for r in self._e._rows(c, "deps_watch", ids=ids)}
            done = self._finished(self._e._rows(c, "jobs_finished", ids=ids))
        return done, [i for i in ids if i not in found]

    def finished(self, ids: list[int]) -> list[FinishedJob]:
        """Of ``ids``, the jobs that finished."""
        with self._e._reader() as c:
            return self._finished(self._e._rows(c, "jobs_finished", ids=ids))

    # -- inspection ---------------------------------------------------------------------

    def _links(self, rows: list[Row]) -> list[DepLink]:
        return [DepLink(int(r[0]), r[1], JobState(r[2]) if r[2] else None, r[3], bool(r[4]))
                for r in rows]

    def links_of(self, job_id: int) -> tuple[list[DepLink], list[DepLink]]:
        """The jobs ``job_id`` runs after, and the jobs that run after it."""
        with self._e._reader() as c:
            return (self._links(self._e._rows(c, "deps_parents", id=job_id)),
                    self._links(self._e._rows(c, "deps_children", id=job_id)))

    def input_of(self, job_id: int) -> Any:
        """A chain link's input: the result of the job it runs after."""
        with self._e._reader() as c:
            rows = self._e._rows(c, "deps_input", id=job_id)
        return self._decode(rows[0][0]) if rows else None

    def group_get(self, group_id: int) -> GroupInfo:
        with self._e._reader() as c:
            rows = self._e._rows(c, "groups_get", group=group_id)
            if not rows:
                raise JobNotFoundError(f"no group with id {group_id}")
            counts = {r[0]: int(r[1]) for r in self._e._rows(c, "groups_counts", group=group_id)}
        r = rows[0]
        created = self._e._instant(r[3])
        assert created is not None  # NOT NULL
        return GroupInfo(int(r[0]), int(r[1]), r[2], created, counts)

    def group_members(self, group_id: int) -> list[int]:
        with self._e._reader() as c:
            return [int(r[0]) for r in self._e._rows(c, "groups_member_ids", group=group_id)]

    def groups_of_job(self, job_id: int) -> tuple[list[int], int | None]:
        """The groups ``job_id`` is a member of, and the group it is the callback of."""
        with self._e._reader() as c:
            member = [int(r[0]) for r in self._e._rows(c, "groups_of_member", id=job_id)]
            callback = self._e._rows(c, "groups_of_callback", id=job_id)
        return member, int(callback[0][0]) if callback else None

    def group_results(self, group_id: int) -> list[FinishedJob | None]:
        """Each member in order: finished (state, result) or None while it has not."""
        with self._e._reader() as c:
            rows = self._e._rows(c, "groups_results", group=group_id)
        out: list[FinishedJob | None] = []
        for member_id, state, result in rows:
            out.append(None if state not in _FINAL else
                       FinishedJob(int(member_id), JobState(state), self._decode(result), None))
        return out
