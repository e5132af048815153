"""Child workflows and parallel steps: work a workflow hands to other jobs and joins.

``wf.child(build_profile, user_id)`` enqueues a child workflow; ``wf.parallel(wf.call(...),
...)`` enqueues one job per call. Both are one place in the parent's history:

1. **Enqueue once.** The jobs are inserted inside the parent's fenced transaction under an
   effect key ``wf:<parent>:<step>`` (``tx.once``): a replay, a crash or a stale attempt
   finds the key and the same job ids, never a second set of jobs. The step is then
   recorded ``waiting`` with those ids.
2. **Wait durably.** Each job carries its parent in its meta (``shiftwork.parent``: the
   parent's id and an event name ``<step>/<i>``). When the job ends for good (a child
   workflow's final status; a call's success, or its last failed attempt) it sends that
   event to the parent with its outcome, under the key ``done`` (sent twice after a crash,
   stored once). Only the join's last report wakes the parent (its job becomes due now):
   the send counts the join's reports in its own transaction (store/joins.py), so a wide
   fan-out replays the parent about twice, not once per member.
3. **Join.** The parent takes each member's event as a sub-record ``<step>/<i>``; while
   one is missing it suspends (holding no worker). When all have reported, the step is
   recorded ``done`` with the results in order, or as failed: one failure raises
   :class:`ChildFailed` *after every member has settled* (no member is left running
   unobserved), on this run and on every replay.

Cancelling the parent cancels the members it started (``cancel_members``).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from shiftwork.core.backoff import DEFAULT_BACKOFF, Backoff
from shiftwork.core.errors import JobCancelled, ShiftworkError
from shiftwork.core.payload import encode_json
from shiftwork.core.states import JobState, StepStatus
from shiftwork.jobs.enqueue import enqueue_requests, insert_rows
from shiftwork.jobs.task import EnqueueOptions, Task
from shiftwork.workflow.errors import ChildFailed, Suspend, WorkflowError
from shiftwork.workflow.events import send_event
from shiftwork.workflow.hooks import boundary
from shiftwork.workflow.replay import digest

if TYPE_CHECKING:
    from datetime import datetime

    from shiftwork.core.payload import Limit
    from shiftwork.jobs.context import JobContext
    from shiftwork.model.outcome import Outcome
    from shiftwork.model.records import Job, StepRecord
    from shiftwork.runtime import Runtime
    from shiftwork.store.base import Store


class Workflow(Protocol):
    """What a join needs of the workflow that waits (workflow/context.py's Workflow: it
    calls in here, so it is named by what it offers, not imported)."""

    _cancel_requested: bool

    @property
    def id(self) -> int: ...

    @property
    def ctx(self) -> JobContext: ...

    @property
    def runtime(self) -> Runtime: ...

    @property
    def history(self) -> dict[str, StepRecord]: ...

    @property
    def _store(self) -> Store: ...

    def _step_limit(self) -> Limit: ...

    def _enter(self, name: str, kind: str, digest_: str | None
               ) -> tuple[StepRecord | None, int]: ...

    def _record(self, name: str, status: StepStatus, result_json: str | None,
                wake_at: datetime | None = None, **fields: Any) -> None: ...

log = logging.getLogger("shiftwork.workflow")

#: The job meta key naming the parent workflow and the event that reports back to it.
PARENT_META = "shiftwork.parent"
#: The internal task that runs one ``wf.call`` as a job and reports to the parent.
CALL_TASK = "shiftwork.workflow_call"


@dataclass(frozen=True)
class Call:
    """One branch of :meth:`Workflow.parallel`, made by :meth:`Workflow.call`."""

    name: str
    task: Task[Any, Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)


def check_call(name: str, task: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Call:
    if not isinstance(name, str) or not name or "/" in name:
        raise WorkflowError(f"wf.call needs a non-empty name without '/', not {name!r}")
    if not isinstance(task, Task):
        raise WorkflowError(f"wf.call({name!r}): give a task registered with @app.task, "
                            f"not {task!r} (a parallel call runs as a job of that task)")
    if task.internal:
        raise WorkflowError(f"wf.call({name!r}): {task.name} is internal to shiftwork")
    if task.is_async:
        raise WorkflowError(f"wf.call({name!r}): async tasks cannot run as parallel calls yet")
    if getattr(task, "workflow_version", None) is not None:
        raise WorkflowError(f"wf.call({name!r}): {task.name} is a workflow; use wf.child")
    return Call(name, task, tuple(args), dict(kwargs))


def join(wf: Workflow, step: str, kind: str, members: list[tuple[str, Task[Any, Any],
                                                              tuple[Any, ...],
                                                              dict[str, Any]]]) -> list[Any]:
    """Enqueue ``members`` once, wait for all of them, return their results in order."""
    d = digest(tuple((label, t.name, list(a), k) for label, t, a, k in members), {})
    rec, pos = wf._enter(step, kind, d)
    if rec is not None and rec.status is StepStatus.DONE:
        return _outcome(step, rec.result or {}, rec.outcome == "failed")
    now = wf.runtime.clock.now()
    fields: dict[str, Any] = {"position": pos, "kind": kind, "digest": d,
                              "started_at": rec.started_at if rec is not None else now}
    if rec is not None and rec.result:
        ids = list(rec.result["jobs"])
    else:
        ids = _enqueue_once(wf, step, members)
        wf._record(step, StepStatus.WAITING, _json(wf, {"jobs": ids}, step), None, **fields)
        if wf._cancel_requested:
            raise JobCancelled(f"workflow {wf.id} was cancelled; stopped at {step!r}")
    subs = [f"{step}/{i}" for i in range(len(ids))]
    taken: dict[str, Any] = {}
    for sub in subs:
        got = wf.history.get(sub)
        if got is not None and got.status is StepStatus.DONE:
            taken[sub] = got.result
    out = [sub for sub in subs if sub not in taken]
    if out:
        # Take every report that is in, in one transaction; the join's last report wakes
        # us for the rest (store/joins.py).
        for sub, (took, payload) in zip(out, wf._store.workflows.events_take(
                wf.id, wf.ctx.attempt, out, started_at=now), strict=True):
            if took:
                taken[sub] = payload
        missing = [i for i, sub in enumerate(subs) if sub not in taken]
        if missing:
            i = missing[0]
            raise Suspend(now + _forever(), f"workflow waiting for job {ids[i]} "
                                            f"({len(missing)} of {len(ids)} still out) "
                                            f"of {step!r}")
    reports: list[dict[str, Any] | None] = [taken[sub] for sub in subs]
    labels = [label for label, _, _, _ in members]
    failed = [{"step": labels[i], "job": ids[i], **(r or {}).get("error", {})}
              for i, r in enumerate(reports) if not (r or {}).get("ok")]
    body = {"jobs": ids, "results": [(r or {}).get("result") for r in reports],
            "errors": failed}
    wf._record(step, StepStatus.DONE, _json(wf, body, step), None,
               outcome="failed" if failed else None, **fields)
    return _outcome(step, body, bool(failed))


def _key_part(step: str) -> str:
    """The step's name in keys (effect key, job unique keys): a long one is shortened to a
    prefix and a digest, to stay within the key limits (500 characters)."""
    if len(step) <= 120:
        return step
    return f"{step[:80]}#{hashlib.sha256(step.encode()).hexdigest()[:16]}"


def _forever() -> Any:
    from shiftwork.workflow.errors import FOREVER

    return FOREVER


def _json(wf: Workflow, value: Any, step: str) -> str:
    return encode_json(value, f"workflow step {step!r}", wf._step_limit())


def _outcome(step: str, body: dict[str, Any], failed: bool) -> list[Any]:
    if failed:
        errors = list(body.get("errors") or [])
        first = errors[0] if errors else {}
        raise ChildFailed(
            f"{step}: {len(errors)} of {len(body.get('jobs') or [])} failed; "
            f"{first.get('step')} (job {first.get('job')}): {first.get('type')}: "
            f"{first.get('message')}", errors)
    return list(body.get("results") or [])


def _enqueue_once(wf: Workflow, step: str, members: list[tuple[str, Task[Any, Any],
                                                               tuple[Any, ...],
                                                               dict[str, Any]]]) -> list[int]:
    """Insert the members' jobs in the parent's fenced transaction, once per step."""
    def enqueue(conn: Any) -> list[int]:
        # Each member is a job of its own task (a call's too): its queue, its process
        # isolation, its rate limit, concurrency and group caps apply as to any other job.
        requests = []
        for i, (_label, task, args, kwargs) in enumerate(members):
            meta = {PARENT_META: {"workflow": wf.id, "event": f"{step}/{i}",
                                  "of": len(members)}}
            key = f"wf{wf.id}:{_key_part(step)}/{i}"
            requests.append(task.using(meta=meta, key=key).call(*args, **kwargs))
        # one insert round trip per batch, in the parent's transaction
        return [int(res.id) for res in enqueue_requests(wf.runtime, requests, conn)]

    with wf.ctx.transaction() as tx:
        out = tx.once(f"wf:{wf.id}:{_key_part(step)}", lambda: enqueue(tx.conn))
    return [int(i) for i in out]


# -- the member's side ---------------------------------------------------------------


def report(ctx: JobContext, *, result: Any = None, error: BaseException | None = None) -> None:
    """A member ended for good: tell its parent (a no-op for jobs without a parent)."""
    report_for(ctx.runtime, ctx.job_id, ctx.meta, result=result, error=error)


def report_for(rt: Runtime, job_id: int, meta: dict[str, Any] | None, *, result: Any = None,
               error: BaseException | None = None) -> None:
    """:func:`report` for a job by id and meta (also used when a member is cancelled
    before it ran, so its parent is not left waiting)."""
    if error is None:
        payload: dict[str, Any] = {"ok": True, "result": result}
    else:
        payload = {"ok": False, "error": {"type": type(error).__name__,
                                          "message": str(error)[:2000]}}
    _report(rt, job_id, meta, payload)


def report_outcome(rt: Runtime, task: Task[Any, Any], meta: dict[str, Any],
                   outcome: Outcome) -> None:
    """A member call's attempt ended (its own task's job, run by the worker): tell its
    parent when that was for good (succeeded, dead or cancelled). A child workflow's
    runner reports for itself; an internal task reports nothing."""
    if PARENT_META not in meta or task.internal \
            or getattr(task, "workflow_version", None) is not None:
        return
    if outcome.state is JobState.SUCCEEDED:
        result = json.loads(outcome.result_json) if outcome.result_json else None
        payload: dict[str, Any] = {"ok": True, "result": result}
    elif outcome.state in (JobState.DEAD, JobState.CANCELLED):
        record = outcome.error or {}
        payload = {"ok": False, "error": {
            "type": str(record.get("type", "Error")).rsplit(".", 1)[-1],
            "message": str(record.get("message", ""))[:2000]}}
    else:
        return
    _report(rt, outcome.job_id, meta, payload)


def _report(rt: Runtime, job_id: int, meta: dict[str, Any] | None,
            payload: dict[str, Any]) -> None:
    parent = (meta or {}).get(PARENT_META)
    if not parent:
        return
    boundary(job_id, "before:report")
    try:
        _send(rt, int(parent["workflow"]), str(parent["event"]), payload, parent.get("of"))
    except ShiftworkError as exc:  # the parent finished or was cancelled: nobody waits
        log.info("job %s: parent workflow %s no longer waits (%s)", job_id,
                 parent.get("workflow"), exc)
    boundary(job_id, "after:report")


def _send(rt: Runtime, workflow: int, event: str, payload: dict[str, Any], of: Any) -> None:
    """Report under the key ``done`` (stored once if sent again after a crash). A member of
    a join of ``of`` reports wakes the parent only with the join's last report (see
    store/joins.py); a member enqueued before joins were counted wakes it every time."""
    if not isinstance(of, int) or isinstance(of, bool) or of < 1:
        send_event(rt, workflow, event, payload, key="done")
        return
    body = encode_json(payload, f"event {event!r}: payload",
                       rt.settings.limit("max_event_payload_bytes"))
    rt.store.workflows.event_send(workflow, event, body, "done",
                                  join=(event.rsplit("/", 1)[0] + "/", of))


@dataclass(frozen=True)
class InternalTask:
    """A task shiftwork declares for itself: what the App registers, then marks internal."""

    name: str
    fn: Callable[..., Any]
    retry: Backoff


def call_task(rt: Runtime) -> InternalTask:
    """The internal task that finishes ``wf.call`` jobs enqueued by a release before 0.x
    ran calls as jobs of their own task (the App declares it once).

    Such a job only hands off: it checks that a workflow's waiting step enqueued it, then
    enqueues the call as a job of the target task (its queue, limits and caps apply),
    carrying the same parent, which reports when it ends. The task is internal: never
    listed for people, and no enqueue or schedule of it is accepted (Task.build).
    """

    def workflow_call(ctx: JobContext, task: str, args: list[Any],
                      kwargs: dict[str, Any]) -> None:
        parent = ctx.meta.get(PARENT_META) or {}
        step = str(parent.get("event", "")).rsplit("/", 1)[0]
        record = rt.store.workflows.steps_get(int(parent.get("workflow", 0))).get(step) \
            if parent else None
        if record is None or ctx.job_id not in (record.result or {}).get("jobs", []):
            raise CallFailed(f"job {ctx.job_id}: {CALL_TASK} runs only the calls a "
                             "workflow enqueued")
        target = rt.registry.get_task(task)
        if target.internal:
            raise CallFailed(f"job {ctx.job_id}: {task} is internal")
        with ctx.transaction() as tx:
            tx.once(f"handoff:{ctx.job_id}", lambda: int(insert_rows(rt, [target.build(
                tuple(args), dict(kwargs), EnqueueOptions(meta=dict(ctx.meta)),
                rt.clock.now())], tx.conn)[0].id))

    return InternalTask(CALL_TASK, workflow_call,
                        replace(DEFAULT_BACKOFF, non_retryable=(CallFailed,)))


class CallFailed(ShiftworkError):
    """A parallel call failed for good (reported to its parent); its job goes dead."""


def cancel_members(wf: Workflow) -> None:
    """The parent is cancelled: cancel every child and call it started (idempotent)."""
    steps = wf._store.workflows.steps_get(wf.id)
    for rec in steps.values():
        if rec.kind not in ("child", "parallel") or rec.status is StepStatus.DONE:
            continue
        for job_id in (rec.result or {}).get("jobs", []):
            try:
                cancel_job(wf.runtime, int(job_id))
            except ShiftworkError as exc:
                log.info("workflow %s: child job %s not cancelled: %s", wf.id, job_id, exc)


def cancel_job(rt: Runtime, job_id: int) -> Job:
    """The one cancel path (``App.cancel_job``, a parent's members): a waiting job is
    cancelled, a running one asked to stop; a started workflow is woken to cancel itself,
    so its compensations run; a member cancelled before it ran tells its parent."""
    if rt.store.workflows.cancel(job_id):
        return rt.store.jobs.get(job_id)
    job = rt.store.jobs.cancel(job_id)
    if job.state is JobState.CANCELLED:
        report_for(rt, job.id, job.meta, error=JobCancelled(
            f"job {job.id} was cancelled before it ran"))
    return job


def cancel_jobs(rt: Runtime, job_ids: list[int]) -> int:
    """:func:`cancel_job` for a batch of ids (a bulk cancel), in one transaction; how many
    were cancelled or asked to stop. The same rules: started workflows are woken to cancel
    themselves, and a member cancelled before it ran tells its parent."""
    batch = rt.store.console.cancel_batch(job_ids)
    for job_id, meta in batch.cancelled:
        if PARENT_META in meta:
            report_for(rt, job_id, meta, error=JobCancelled(
                f"job {job_id} was cancelled before it ran"))
    return len(batch.cancelled) + len(batch.asked)
