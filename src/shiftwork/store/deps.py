"""The dependency statements, written once: what composition/settling.py runs to write a
graph, resolve finished parents and sweep (``store.deps``, :class:`DepsSql`), and
the reads of groups and finished jobs. Each engine supplies its statements (``deps.sql``)
and ``_rows`` / ``_deps_resolve_step``; nothing here knows which engine runs it. The
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
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

from shiftwork.core.errors import JobNotFoundError
from shiftwork.core.states import FINAL, JobState
from shiftwork.model.new_job import NO_MARK, Mark, NewJob
from shiftwork.model.records import DepLink, EnqueueResult, FinishedJob, GroupInfo
from shiftwork.store.engine_sql import EngineSql

Row = Sequence[Any]
_FINAL = {s.value for s in FINAL}


class DepsActions(EngineSql):
    """Mixed into each engine's store."""

    if TYPE_CHECKING:  # the engine's, not redefined here
        def jobs_insert(self, jobs: list[NewJob], conn: Any = None
                        ) -> list[EnqueueResult]: ...

        def transaction(self) -> AbstractContextManager[Any]: ...

    def _finished_here(self, c: Any, job_ids: list[int]) -> None:
        """Jobs just finished on ``c`` outside a completion (a cancel): resolve them."""
        self._resolve_in(c, job_ids)

    def _rows(self, c: Any, query: str, **params: Any) -> list[Row]:
        """Run a named query on ``c`` (lists as the engine passes arrays); all its rows."""
        raise NotImplementedError

    def _deps_resolve_step(self, c: Any, parent_ids: list[int],
                           finished: bool = False) -> list[Row]:
        """Take the finished parents' open edges and count their dependents down; returns
        (id, state, watched) of each dependent changed. ``finished``: the parents just
        finished (a completion), so waiters on them are woken too (where that is needed)."""
        raise NotImplementedError

    def _decode(self, value: Any) -> Any:
        """A JSON column as the engine returns it (text here; see the queries)."""
        return None if value is None else json.loads(value)

    @contextmanager
    def _in_transaction(self, conn: Any) -> Iterator[Any]:
        if conn is not None:
            yield conn
        else:
            with self.transaction() as c:
                yield c

    # -- enqueue ------------------------------------------------------------------------

    def _insert_marked(self, c: Any, jobs: list[NewJob], marks: list[Mark]
                       ) -> list[EnqueueResult]:
        """Insert ``jobs`` on ``c`` with their marks (jobs awaited, watched, group). Here:
        insert, then mark; an engine that can write them with the rows overrides this."""
        results = self.jobs_insert(jobs, conn=c)
        marked = [(r.id, m) for r, m in zip(results, marks, strict=True) if m != NO_MARK]
        if marked:
            self._rows(c, "deps_mark", ids=[i for i, _ in marked],
                       counts=[m.deps_pending for _, m in marked],
                       watch=[m.watched for _, m in marked],
                       groups=[m.group_id for _, m in marked],
                       marks=[(i, m.deps_pending, m.watched, m.group_id) for i, m in marked])
        return results

    # -- resolution -------------------------------------------------------------------

    def _groups_count_step(self, c: Any, job_ids: list[int]) -> list[int]:
        """Count the finished, uncounted group members among ``job_ids`` into their
        groups (once each); the groups whose callback may now be due."""
        return [int(r[0]) for r in self._rows(c, "groups_count", ids=job_ids) if r[1]]

    def _groups_settle_step(self, c: Any, group_ids: list[int]) -> list[Row]:
        """Make the due groups' callbacks available (or cancel them); (id, state,
        watched) of each callback moved."""
        return [r for r in self._rows(c, "groups_settle", ids=group_ids) if r[0] is not None]

    def _settle_groups(self, c: Any, group_ids: list[int]) -> None:
        cancelled = [int(r[0]) for r in self._groups_settle_step(c, sorted(set(group_ids)))
                     if r[1] == JobState.CANCELLED.value and r[2]]
        self._resolve_in(c, cancelled)  # a cancelled callback's own dependents

    def _resolve_in(self, c: Any, parent_ids: list[int], finished: bool = False) -> None:
        """Resolve finished parents on ``c``: their dependents' edges, and their groups'
        counts; a dependent (or callback) cancelled in turn is resolved next (a cancel
        runs down a chain)."""
        while parent_ids:
            changed = self._deps_resolve_step(c, parent_ids, finished)
            due = self._groups_count_step(c, parent_ids)
            if due:
                changed += self._groups_settle_step(c, due)
            finished = False
            parent_ids = [int(r[0]) for r in changed
                          if r[1] == JobState.CANCELLED.value and r[2]]

    def _instant(self, value: Any) -> Any:
        return value

    def _reader(self) -> AbstractContextManager[Any]:
        """A connection for reads (SQLite: no write transaction)."""
        return self._session()


class DepsSql:
    """The statements composition/settling.py runs, each on the caller's connection
    ``c`` (in :meth:`transaction`): named for what they write, deciding nothing."""

    def __init__(self, engine: DepsActions) -> None:
        self._e = engine

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
        return self._e._insert_marked(c, jobs, marks)

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
        self._e._resolve_in(c, parent_ids)

    def settle_groups(self, c: Any, group_ids: list[int]) -> None:
        """Release (or cancel) the callbacks of these due groups."""
        self._e._settle_groups(c, group_ids)

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
        return [FinishedJob(int(r[0]), JobState(r[1]), self._e._decode(r[2]), self._e._decode(r[3]))
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
        return self._e._decode(rows[0][0]) if rows else None

    def group_get(self, group_id: int) -> GroupInfo:
        with self._e._reader() as c:
            rows = self._e._rows(c, "groups_get", group=group_id)
            if not rows:
                raise JobNotFoundError(f"no group with id {group_id}")
            counts = {r[0]: int(r[1]) for r in self._e._rows(c, "groups_counts", group=group_id)}
        r = rows[0]
        return GroupInfo(int(r[0]), int(r[1]), r[2], self._e._instant(r[3]), counts)

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
                       FinishedJob(int(member_id), JobState(state), self._e._decode(result), None))
        return out
