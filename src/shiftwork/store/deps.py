"""Composition in the store, written once: jobs that run after others, groups, and the
finished jobs a waiter asks about. Each engine supplies its statements (``deps.sql``) and
``_rows`` / ``_deps_resolve_step``; nothing here knows which engine runs it.

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
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple

from shiftwork.core.errors import DependencyError, JobNotFoundError
from shiftwork.core.states import FINAL, JobState
from shiftwork.model.new_job import DEPS_WAIT, NewJob
from shiftwork.model.records import DepLink, EnqueueResult, FinishedJob, GroupInfo
from shiftwork.store.engine_sql import EngineSql

Row = Sequence[Any]
_FINAL = {s.value for s in FINAL}


class Mark(NamedTuple):
    """What a job of a graph is written with besides its row."""

    deps_pending: int = 0  # how many jobs (a group: one) it waits for
    watched: bool = False  # a job of the same insert waits for it
    group_id: int | None = None  # the group it is a member of


NO_MARK = Mark()


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

    def jobs_insert_graph(self, jobs: list[NewJob], conn: Any = None, *,
                          group: bool = False, callback_of: int | None = None,
                          with_callback: bool = False
                          ) -> tuple[list[EnqueueResult], int | None]:
        """Insert jobs with their dependencies in one transaction; returns their results
        and, with ``group``, the new group's id (its members: all of ``jobs``, or all but
        the last with ``with_callback``: the last is then the group's callback).

        ``callback_of``: the last job is that group's callback (at most one per group).
        A callback waits for its group as one dependency (its ``on_failure`` says what
        a failed member does to it, see ``Group.then``), not for an edge per member.
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
            members = (len(jobs) - 1 if with_callback else len(jobs)) if group else 0
            group_id: int | None = None
            if group:
                group_id = int(self._rows(c, "groups_insert", total=members)[0][0])
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
            results = self._insert_marked(c, rows, marks)
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
                self._rows(c, "deps_link", jobs=[e[0] for e in edges],
                           parents=[e[1] for e in edges], on_failure=[e[2] for e in edges],
                           edges=edges)
            if callback:
                set_ = self._rows(c, "groups_set_callback", group=callback_of,
                                  callback=ids[-1], on_failure=jobs[-1].on_failure)
                if not set_:
                    raise DependencyError(
                        f"group {callback_of} already has a callback (or does not exist); "
                        "a group's callback is set once")
                if set_[0][1]:  # its members finished already (or one failed: "cancel")
                    self._settle_groups(c, [int(set_[0][0])])
            finished = [p for p, s in states.items() if s in _FINAL]
            if finished:  # parents that finished before this enqueue: resolve now
                self._resolve_in(c, finished)
        return results, group_id

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

    def deps_resolve(self, parent_ids: list[int]) -> None:
        """Resolve the dependents of finished jobs (idempotent: an edge counts once)."""
        if parent_ids:
            with self.transaction() as c:
                self._resolve_in(c, parent_ids)

    def deps_sweep(self, limit: int = 1000) -> int:
        """Resolve edges whose parent finished but were left open (a crash between a
        completion and its resolution, a rescue to dead, a cancel elsewhere), count the
        group members left uncounted and settle the groups left due; how many of those."""
        with self.transaction() as c:
            parents = [int(r[0]) for r in self._rows(c, "deps_sweep", limit=limit)]
            if parents:
                self._resolve_in(c, parents)
            left = self._rows(c, "groups_sweep", limit=limit)
            members = [int(r[1]) for r in left if r[0] == "member"]
            if members:
                self._resolve_in(c, members)
            groups = [int(r[1]) for r in left if r[0] == "group"]
            if groups:
                self._settle_groups(c, groups)
        return len(parents) + len(members) + len(groups)

    def groups_prune(self, older_than: float, limit: int = 10_000) -> int:
        """Delete groups older than ``older_than`` seconds whose jobs were all pruned;
        how many."""
        with self.transaction() as c:
            return len(self._rows(c, "groups_prune", older=older_than, limit=limit))

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
        for member_id, state, result in rows:
            out.append(None if state not in _FINAL else
                       FinishedJob(int(member_id), JobState(state), self._decode(result), None))
        return out
