"""Composition in the store, written once: jobs that run after others, groups, and the
finished jobs a waiter asks about. Each engine supplies its statements (``deps.sql``) and
``_rows`` / ``_deps_resolve_step``; nothing here knows which engine runs it.

How it is stored: an edge per dependency (``job_deps``); the dependent waits as
'scheduled' at ``DEPS_WAIT`` with ``deps_pending`` counting its open edges, so the claim
never sees it. A parent is ``watched``; its completion (the same transaction on SQLite,
the next statement on Postgres, whose completion statement returns the flag) takes its
edges once each and counts its dependents down: available at zero, cancelled after a
failed parent unless ``on_failure="run"``. The leader's sweep closes edges a crash left.
A group is a row and its members' rows; its callback is one dependent of every member.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..errors import DependencyError, JobNotFoundError
from ..job import DEPS_WAIT, NewJob
from ..records import DepLink, EnqueueResult, FinishedJob, GroupInfo
from ..states import FINAL, JobState
from .engine_sql import EngineSql

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

    def jobs_insert_graph(self, jobs: list[NewJob], conn: Any = None, *,
                          group: bool = False, callback_of: int | None = None,
                          with_callback: bool = False
                          ) -> tuple[list[EnqueueResult], int | None]:
        """Insert jobs with their dependencies in one transaction; returns their results
        and, with ``group``, the new group's id (its members: all of ``jobs``, or all but
        the last with ``with_callback``: the last is then the group's callback).

        ``callback_of``: the last job is that group's callback (at most one per group).
        A parent that does not exist raises DependencyError and nothing is written.
        """
        with self._in_transaction(conn) as c:
            existing = sorted({p for j in jobs for p in j.after})
            states: dict[int, str] = {}
            if existing:
                states = {int(r[0]): r[1] for r in self._rows(c, "deps_watch", ids=existing)}
                missing = [p for p in existing if p not in states]
                if missing:
                    raise DependencyError(
                        f"after=: no job with id {', '.join(map(str, missing))} (never "
                        "enqueued, or finished and pruned); nothing was enqueued")
            rows = [replace(j, run_at=DEPS_WAIT) if j.after or j.after_new else j
                    for j in jobs]
            results = self.jobs_insert(rows, conn=c)
            ids = [r.id for r in results]
            edges: list[tuple[int, int, str]] = []
            counts: list[tuple[int, int]] = []
            new_parents: set[int] = set()
            for i, j in enumerate(jobs):
                parents = list(dict.fromkeys([*j.after, *(ids[k] for k in j.after_new)]))
                if not parents:
                    continue
                if not results[i].created:
                    raise DependencyError(f"job {ids[i]}: a job with its unique key is "
                                          "already waiting; dependencies need a new job")
                new_parents.update(ids[k] for k in j.after_new)
                edges += [(ids[i], p, j.on_failure) for p in parents]
                counts.append((ids[i], len(parents)))
            if edges:
                self._rows(c, "deps_link", jobs=[e[0] for e in edges],
                           parents=[e[1] for e in edges], on_failure=[e[2] for e in edges],
                           edges=edges)
            pending = dict(counts)
            marks = [(i, pending.get(i, 0), i in new_parents)
                     for i in sorted(set(pending) | new_parents)]
            if marks:  # the new jobs' counts, and the new parents watched: one statement
                self._rows(c, "deps_mark", ids=[m[0] for m in marks],
                           counts=[m[1] for m in marks], watch=[m[2] for m in marks],
                           marks=marks)
            group_id: int | None = None
            if group:
                members = ids[:-1] if with_callback else ids
                group_id = int(self._rows(c, "groups_insert", total=len(members))[0][0])
                self._rows(c, "groups_add_members", group=group_id, ids=members)
                if with_callback:
                    callback_of = group_id
            if callback_of is not None and not self._rows(
                    c, "groups_set_callback", group=callback_of, callback=ids[-1]):
                raise DependencyError(f"group {callback_of} already has a callback (or does "
                                      "not exist); a group's callback is set once")
            finished = [p for p, s in states.items() if s in _FINAL]
            if finished:  # parents that finished before this enqueue: resolve now
                self._resolve_in(c, finished)
        return results, group_id

    # -- resolution -------------------------------------------------------------------

    def _resolve_in(self, c: Any, parent_ids: list[int], finished: bool = False) -> None:
        """Resolve finished parents on ``c``; a dependent cancelled in turn is resolved
        next (a cancel runs down a chain)."""
        while parent_ids:
            changed = self._deps_resolve_step(c, parent_ids, finished)
            finished = False
            parent_ids = [int(r[0]) for r in changed
                          if r[1] == JobState.CANCELLED.value and r[2]]

    def deps_resolve(self, parent_ids: list[int]) -> None:
        """Resolve the dependents of finished jobs (idempotent: an edge counts once)."""
        if parent_ids:
            with self.transaction() as c:
                self._resolve_in(c, parent_ids)

    def deps_sweep(self, limit: int = 1000) -> int:
        """Resolve edges whose parent finished but were left open (a crash between a
        completion and its resolution, a rescue to dead, a cancel elsewhere); how many
        parents."""
        with self.transaction() as c:
            parents = [int(r[0]) for r in self._rows(c, "deps_sweep", limit=limit)]
            if parents:
                self._resolve_in(c, parents)
        return len(parents)

    # -- waiting on results ------------------------------------------------------------

    def _finished(self, rows: list[Row]) -> list[FinishedJob]:
        return [FinishedJob(int(r[0]), JobState(r[1]), self._decode(r[2]), self._decode(r[3]))
                for r in rows]

    def jobs_watch(self, ids: list[int]) -> tuple[list[FinishedJob], list[int]]:
        """Mark jobs as waited on (their completion notifies); returns those already
        finished and the ids that name no job."""
        with self.transaction() as c:
            found = {int(r[0]) for r in self._rows(c, "deps_watch", ids=ids)}
            done = self._finished(self._rows(c, "jobs_finished", ids=ids))
        return done, [i for i in ids if i not in found]

    def _reader(self) -> AbstractContextManager[Any]:
        """A connection for reads (SQLite: no write transaction)."""
        return self._session()

    def jobs_finished(self, ids: list[int]) -> list[FinishedJob]:
        """Of ``ids``, the jobs that finished."""
        with self._reader() as c:
            return self._finished(self._rows(c, "jobs_finished", ids=ids))

    # -- inspection ---------------------------------------------------------------------

    def _links(self, rows: list[Row]) -> list[DepLink]:
        return [DepLink(int(r[0]), r[1], JobState(r[2]) if r[2] else None, r[3], bool(r[4]))
                for r in rows]

    def jobs_dependencies(self, job_id: int) -> tuple[list[DepLink], list[DepLink]]:
        """The jobs ``job_id`` runs after, and the jobs that run after it."""
        with self._reader() as c:
            return (self._links(self._rows(c, "deps_parents", id=job_id)),
                    self._links(self._rows(c, "deps_children", id=job_id)))

    def jobs_input(self, job_id: int) -> Any:
        """A chain link's input: the result of the job it runs after."""
        with self._reader() as c:
            rows = self._rows(c, "deps_input", id=job_id)
        return self._decode(rows[0][0]) if rows else None

    def groups_get(self, group_id: int) -> GroupInfo:
        with self._reader() as c:
            rows = self._rows(c, "groups_get", group=group_id)
            if not rows:
                raise JobNotFoundError(f"no group with id {group_id}")
            counts = {r[0]: int(r[1]) for r in self._rows(c, "groups_counts", group=group_id)}
        r = rows[0]
        return GroupInfo(int(r[0]), int(r[1]), r[2], self._instant(r[3]), counts)

    def _instant(self, value: Any) -> Any:
        return value

    def groups_members(self, group_id: int) -> list[int]:
        with self._reader() as c:
            return [int(r[0]) for r in self._rows(c, "groups_member_ids", group=group_id)]

    def groups_of_job(self, job_id: int) -> tuple[list[int], int | None]:
        """The groups ``job_id`` is a member of, and the group it is the callback of."""
        with self._reader() as c:
            member = [int(r[0]) for r in self._rows(c, "groups_of_member", id=job_id)]
            callback = self._rows(c, "groups_of_callback", id=job_id)
        return member, int(callback[0][0]) if callback else None

    def groups_results(self, group_id: int) -> list[FinishedJob | None]:
        """Each member in order: finished (state, result) or None while it has not."""
        with self._reader() as c:
            rows = self._rows(c, "groups_results", group=group_id)
        out: list[FinishedJob | None] = []
        for r in rows:
            state = r[1]
            out.append(None if state not in _FINAL else
                       FinishedJob(int(r[0]), JobState(state), self._decode(r[2]), None))
        return out
