"""Composition above the store: result handles, groups with a callback, chains and
dependency graphs. Every one of them is jobs and dependency rows (store/deps.py),
inserted in one transaction; nothing here runs anything.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from shiftwork.core.crypt import Keys, is_sealed
from shiftwork.core.errors import DependencyError
from shiftwork.core.states import JobState
from shiftwork.jobs.enqueue import insert_graph
from shiftwork.jobs.handle import JobHandle, check_on_failure
from shiftwork.jobs.sealing import open_value
from shiftwork.model.new_job import NewJob
from shiftwork.model.records import ClaimedJob, EnqueueResult, GroupInfo

if TYPE_CHECKING:
    from shiftwork.jobs.task import JobRequest
    from shiftwork.runtime import Runtime
    from shiftwork.store.base import Store

R = TypeVar("R")

#: In a job's meta: its last argument is filled in when it runs. "after": the result of
#: the one job it runs after (a chain link); "group": its group's results (a callback).
INPUT_META_KEY = "shiftwork.input"


def _with_input(job: NewJob, kind: str) -> NewJob:
    meta = json.loads(job.meta_json)
    meta[INPUT_META_KEY] = kind
    return replace(job, meta_json=json.dumps(meta, separators=(",", ":")))


def _check_takes_input(request: JobRequest, what: str) -> None:
    """The task must accept one more positional argument: the input it is given."""
    try:
        request.task._signature.bind(*request.args, None, **request.kwargs)
    except TypeError:
        raise DependencyError(
            f"{request.task.name}{request.task._signature} cannot take {what} as its last "
            f"argument after {request.args!r}: give it a parameter for it") from None


def _build(rt: Runtime, requests: Sequence[JobRequest], takes_input: bool = False
           ) -> list[NewJob]:
    """Validate requests into rows; ``takes_input``: each is checked with its input as a
    last argument (a placeholder, left out of the stored arguments)."""
    now = rt.clock.now()
    if not takes_input:
        return [r.task.build(r.args, r.kwargs, r.options, now) for r in requests]
    rows, keys = [], rt.keys
    for r in requests:
        row = r.task.build((*r.args, None), r.kwargs, r.options, now)
        stored = json.loads(row.args_json)
        aad = f"args:{r.task.name}"
        sealed = keys if is_sealed(stored) else None
        if sealed is not None:  # an encrypted task's: opened to drop the placeholder
            stored = json.loads(sealed.open(stored, aad))
        stored["args"] = stored["args"][:-1]
        text = json.dumps(stored, separators=(",", ":"))
        rows.append(replace(row, args_json=text if sealed is None
                            else sealed.seal_json(text, aad)))
    return rows


class Group:
    """Jobs enqueued together (``app.group``); at most one callback after all of them."""

    def __init__(self, rt: Runtime, group_id: int, members: Sequence[EnqueueResult],
                 callback: JobHandle[Any] | None = None) -> None:
        self._rt = rt
        self.id = group_id
        self._members = members
        self._jobs: list[JobHandle[Any]] | None = None
        #: The callback's handle, once there is one (``then``).
        self.callback = callback

    @property
    def jobs(self) -> list[JobHandle[Any]]:
        """The members' handles, in order (made on first use: a group of 10,000 spent
        ~15 ms making handles nobody asked for)."""
        if self._jobs is None:
            results = self._rt.results
            self._jobs = [m if isinstance(m, JobHandle) else JobHandle(m.id, m.created, results)
                          for m in self._members]
        return self._jobs

    def __repr__(self) -> str:
        return f"<Group {self.id} of {len(self._members)} jobs>"

    def then(self, request: JobRequest, *, on_failure: str = "run") -> JobHandle[Any]:
        """Enqueue the group's callback: it runs once, when every member finished, and
        receives the members' results (in order; None for a member that did not
        succeed) as its last argument, also readable as ``ctx.group_results()``.

        ``on_failure="cancel"``: cancel it instead as soon as a member dies or is
        cancelled. ``app.group(..., then=request)`` enqueues it with the members, in
        the same transaction.
        """
        job = _callback_row(self._rt, request, on_failure)
        results, _ = insert_graph(self._rt, [job], request.options.conn,
                                             callback_of=self.id)
        self.callback = JobHandle(results[0].id, True, self._rt.results)
        return self.callback

    def progress(self) -> GroupInfo:
        """How far the group got: ``done`` (succeeded), ``failed``, ``total``."""
        return self._rt.store.deps.group_get(self.id)


def _callback_row(rt: Runtime, request: JobRequest, on_failure: str) -> NewJob:
    _check_takes_input(request, "the group's results")
    job = _build(rt, [request], takes_input=True)[0]
    return _with_input(replace(job, on_failure=check_on_failure(on_failure)), "group")


def make_group(rt: Runtime, requests: Iterable[JobRequest], conn: Any = None,
               then: JobRequest | None = None, on_failure: str = "run") -> Group:
    requests = list(requests)
    if not requests:
        raise DependencyError("a group needs at least one job; nothing was enqueued")
    rows = _build(rt, requests)
    if then is not None:
        callback = _callback_row(rt, then, on_failure)
        rows.append(callback)  # waits for the group (store/deps.py)
    results, group_id = insert_graph(rt, rows, conn, group=True,
                                          with_callback=then is not None)
    assert group_id is not None
    if then is not None:
        last = results[-1]
        return Group(rt, group_id, results[:-1], JobHandle(last.id, last.created, rt.results))
    return Group(rt, group_id, results)


class Chain(Generic[R]):
    """Jobs that run one after another, each given the previous one's result."""

    def __init__(self, jobs: list[JobHandle[Any]]) -> None:
        self.jobs = jobs

    @property
    def last(self) -> JobHandle[R]:
        """The last link's handle."""
        return self.jobs[-1]

    def result(self, timeout: float | None = 30.0) -> R:
        """The last link's result (a link that fails cancels the ones after it)."""
        return self.last.result(timeout)

    async def result_async(self, timeout: float | None = 30.0) -> R:
        """:meth:`result` for asyncio code."""
        return await self.last.result_async(timeout)


def make_chain(rt: Runtime, requests: Sequence[JobRequest], conn: Any = None
               ) -> Chain[Any]:
    if not requests:
        raise DependencyError("a chain needs at least one job; nothing was enqueued")
    for before, request in itertools.pairwise(requests):
        if not before.task.options.store_result:
            raise DependencyError(f"{before.task.name} does not store its result "
                                  "(store_result=False), so it cannot feed "
                                  f"{request.task.name} in a chain")
        _check_takes_input(request, f"the result of {before.task.name}")
    rows = _build(rt, requests[:1]) + _build(rt, requests[1:], takes_input=True)
    rows = [rows[0]] + [_with_input(replace(r, after_new=(i,)), "after")
                        for i, r in enumerate(rows[1:])]
    results, _ = insert_graph(rt, rows, conn)
    return Chain([JobHandle(r.id, r.created, rt.results) for r in results])


def make_graph(rt: Runtime, nodes: Mapping[str, JobRequest],
               after: Mapping[str, Iterable[str]], conn: Any = None
               ) -> dict[str, JobHandle[Any]]:
    """Jobs named in ``nodes``, each running after the ones ``after`` names: one
    transaction. A cycle or an unknown name raises DependencyError, nothing written."""
    parents = {name: list(dict.fromkeys(after.get(name, ()))) for name in nodes}
    unknown = sorted({f"{n} -> {p}" for n, ps in after.items() for p in ps
                      if p not in nodes} | {n for n in after if n not in nodes})
    if unknown:
        raise DependencyError(f"graph: unknown job names: {', '.join(unknown)}")
    order: list[str] = []
    state: dict[str, int] = {}  # 1: being visited, 2: placed

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            cycle = [*path[path.index(name):], name]
            raise DependencyError(f"graph: a cycle: {' -> '.join(cycle)} (each runs after "
                                  "the next); nothing was enqueued")
        state[name] = 1
        for p in parents[name]:
            visit(p, [*path, name])
        state[name] = 2
        order.append(name)

    for name in nodes:
        visit(name, [])
    position = {name: i for i, name in enumerate(order)}
    rows = _build(rt, [nodes[name] for name in order])
    rows = [replace(r, after_new=tuple(position[p] for p in parents[name]))
            for name, r in zip(order, rows, strict=True)]
    results, _ = insert_graph(rt, rows, conn)
    return {name: JobHandle(results[position[name]].id, results[position[name]].created, rt.results)
            for name in nodes}


def with_input(store: Store, job: ClaimedJob, keys: Keys | None = None) -> ClaimedJob:
    """A claimed chain link or group callback with its input as its last argument (an
    encrypted job's result opened with ``keys``: EncryptionKeyError if they cannot)."""
    kind = job.meta.get(INPUT_META_KEY)
    if kind == "after":
        value = store.deps.input_of(job.id)
        if is_sealed(value):  # bound to the row it was written to: the job it runs after
            parents, _ = store.deps.links_of(job.id)
            value = open_value(keys, value, f"result:{parents[0].job_id}" if parents
                               else "result")
    elif kind == "group":
        value = group_results(store, job.id, keys)
    else:
        return job
    return replace(job, args=[*job.args, value])


def group_results(store: Store, callback_id: int, keys: Keys | None = None) -> list[Any]:
    """The results of the members of the group ``callback_id`` is the callback of (an
    encrypted member's opened with ``keys``)."""
    _, group_id = store.deps.groups_of_job(callback_id)
    if group_id is None:
        raise DependencyError(f"job {callback_id} is not a group's callback")
    return [open_value(keys, r.result, f"result:{r.id}")
            if r is not None and r.state is JobState.SUCCEEDED else None
            for r in store.deps.group_results(group_id)]

