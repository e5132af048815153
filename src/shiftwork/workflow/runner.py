"""Turn a workflow function into a task: replay, suspension, durable compensation.

One run of a workflow job:

1. ``workflow_begin`` reads the instance's status and history (creating the row on the
   first run, with the code version).
2. A finished instance re-reports its outcome; a ``compensating`` one replays its
   recorded steps only (to collect their compensations) and goes on compensating.
3. Otherwise the body runs. A suspension becomes a ``Snooze``. A final failure (the last
   attempt, a non-retryable error, a step that spent its own attempts) or a cancel
   *records the decision to compensate first* (and gives the job a fresh attempt
   budget for it), then runs the compensations in reverse, each recorded, then records
   the final status. A crash anywhere resumes from the last record.

The last attempt is protected by the lease rescue (store/*/jobs.sql, jobs_rescue): a
workflow run lost before its body began (claimed ahead) is not counted and simply runs
again; one lost in its body on the last attempt is noted and not counted, and the next
run, seeing that attempt lost, decides to compensate; one lost while compensating on
the last attempt of its compensation budget ends the workflow ``failed``.

Suspensions (sleeps, waits, backoffs) are snoozes: they do not count as attempts, so the
job's attempt number and ``max_attempts`` mean what they say (``Job.counted_attempt``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import inspect
import logging
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

from shiftwork.core.backoff import DEFAULT_BACKOFF, Backoff, repeat_on_storage_error
from shiftwork.core.control import Snooze
from shiftwork.core.errors import JobCancelled, LeaseLost
from shiftwork.core.payload import encode_json
from shiftwork.core.states import StepStatus, WorkflowStatus
from shiftwork.jobs.context import JobContext
from shiftwork.jobs.task import Task
from shiftwork.workflow.aio import AsyncWorkflow
from shiftwork.workflow.children import cancel_members, report
from shiftwork.workflow.context import Workflow
from shiftwork.workflow.continuing import ContinuedAsNew
from shiftwork.workflow.errors import (
    CompensationFailed,
    NonDeterminismError,
    StepFailed,
    StopReplay,
    Suspend,
    WorkflowCompensated,
    WorkflowError,
    WorkflowFailed,
)
from shiftwork.workflow.hooks import boundary

log = logging.getLogger("shiftwork.workflow")

FINAL = frozenset({WorkflowStatus.FAILED, WorkflowStatus.COMPENSATED, WorkflowStatus.CANCELLED})
#: Compensating gets at least this many attempts of its own (or the workflow's max_attempts,
#: if more): undoing half a saga must outlast an outage of the service it calls.
COMPENSATION_ATTEMPTS = 10


def code_version(fn: Callable[..., Any]) -> str:
    """A short digest of the body's source: what ``workflows show`` reports per instance."""
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError):
        source = fn.__qualname__
    return hashlib.sha256(source.encode()).hexdigest()[:12]


def workflow_task(register: Callable[..., Task[Any, Any]], fn: Callable[..., Any], *,
                  version: str | None = None, retry: Backoff | None = None) -> Task[Any, Any]:
    """Register ``fn(wf, ...)`` as a task whose first argument is a :class:`Workflow`;
    ``register(run, retry=...)`` registers the job-side function on the App with the
    workflow's options (``retry`` extended with the errors that end a workflow)."""
    if not callable(fn):
        raise WorkflowError(f"@app.workflow needs a function, not {fn!r}")
    params = list(inspect.signature(fn).parameters.values())
    if not params:
        raise WorkflowError(f"workflow {fn.__qualname__}: the first parameter receives the "
                            "Workflow, e.g. def place_order(wf, order_id)")
    if version is not None and (not isinstance(version, str) or not version):
        raise WorkflowError(f"workflow {fn.__qualname__}: version must be a non-empty string")
    ver = version or code_version(fn)
    # These end the workflow for good; their compensation already ran (or must not run).
    policy = retry or DEFAULT_BACKOFF
    policy = replace(policy, non_retryable=(
        *policy.non_retryable, WorkflowFailed, NonDeterminismError))
    holder: dict[str, Any] = {}

    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def run_async(ctx: JobContext, *args: Any, **kwargs: Any) -> Any:
            wf = await asyncio.to_thread(Workflow.begin, ctx, ver)
            awf = AsyncWorkflow(wf, asyncio.get_running_loop())
            try:
                result = await _drive_async(wf, holder["task"], lambda: fn(awf, *args, **kwargs))
            except (WorkflowFailed, JobCancelled) as exc:  # final: tell a waiting parent
                await asyncio.to_thread(report, ctx, error=exc)
                raise
            await asyncio.to_thread(report, ctx, result=result)
            return result
        run: Callable[..., Any] = run_async
    else:
        @functools.wraps(fn)
        def run_sync(ctx: JobContext, *args: Any, **kwargs: Any) -> Any:
            wf = Workflow.begin(ctx, ver)
            try:
                result = _drive(wf, holder["task"], lambda: fn(wf, *args, **kwargs))
            except (WorkflowFailed, JobCancelled) as exc:  # final: tell a waiting parent
                report(ctx, error=exc)
                raise
            report(ctx, result=result)
            return result
        run = run_sync

    # The task's signature is the body's, with the Workflow slot taken by the job context.
    ctx_param = inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    run.__signature__ = inspect.signature(fn).replace(  # type: ignore[attr-defined]
        parameters=[ctx_param, *params[1:]])
    task = register(run, retry=policy)
    task.workflow_version = ver  # type: ignore[attr-defined]
    task.handles_cancel = True  # cancelled before it began, it still runs to compensate
    holder["task"] = task
    return task


# -- one run -------------------------------------------------------------------------


def _prologue(wf: Workflow, task: Task[Any, Any]) -> str | None:
    """Before the body: re-report a finished instance; protect the last attempt.

    Returns a cause when the previous (last) attempt was lost: the run must compensate.
    """
    run, ctx = wf.run, wf.ctx
    if run.status in FINAL:
        _reraise_final(wf)
    if run.status is not WorkflowStatus.RUNNING:
        return None
    # The lease rescue notes a run lost on its last attempt (and does not count it, so
    # this run exists): the loss is the final failure, and this run compensates.
    last = run.last_attempt
    if last is not None and ctx.attempt > last and _lost(wf, last):
        return f"its last attempt ({last}) was lost (the worker stopped renewing its lease)"
    return None


def _lost(wf: Workflow, attempt: int) -> bool:
    job = wf.runtime.store.jobs.get(wf.id)
    return any(e.get("attempt") == attempt and e.get("kind") == "lease_expired"
               for e in job.errors)


def _is_final(wf: Workflow, task: Task[Any, Any], exc: BaseException) -> bool:
    return (wf.ctx.counted_attempt >= wf.ctx.max_attempts or isinstance(exc, StepFailed)
            or not task.options.retry.retryable(exc))


def _drive(wf: Workflow, task: Task[Any, Any], body: Callable[[], Any]) -> Any:
    lost = _prologue(wf, task)
    if wf.compensating or lost is not None:
        if lost is not None:
            _decide(wf, task, lost, cancelled=False)
        wf.compensating = True
        _collect(body)
        return _compensate(wf, task)
    try:
        result = body()
        wf.check_complete()
    except Suspend as s:
        raise Snooze(until=s.until, reason=s.reason) from None
    except ContinuedAsNew:  # the reset committed: the next run is due at once
        raise Snooze(reason="continued as new") from None
    except JobCancelled:
        cancel_members(wf)  # before the decision: a crash between them cancels again
        _decide(wf, task, "cancelled", cancelled=True)
        return _compensate(wf, task)
    except (NonDeterminismError, StopReplay):
        raise  # stops the workflow; history untouched, so a fixed version can go on
    except Exception as exc:
        if not _is_final(wf, task, exc):
            raise
        _decide(wf, task, f"{type(exc).__name__}: {exc}", cancelled=False)
        return _compensate(wf, task, exc)
    _finish(wf, WorkflowStatus.SUCCEEDED)
    return result


async def _drive_async(wf: Workflow, task: Task[Any, Any], body: Callable[[], Any]) -> Any:
    lost = await asyncio.to_thread(_prologue, wf, task)
    if wf.compensating or lost is not None:
        if lost is not None:
            await asyncio.to_thread(_decide, wf, task, lost, False)
        wf.compensating = True
        with contextlib.suppress(StopReplay, Exception):  # as _collect, awaited
            await body()
        return await asyncio.to_thread(_compensate, wf, task)
    try:
        result = await body()
        wf.check_complete()
    except Suspend as s:
        raise Snooze(until=s.until, reason=s.reason) from None
    except ContinuedAsNew:  # the reset committed: the next run is due at once
        raise Snooze(reason="continued as new") from None
    except (JobCancelled, asyncio.CancelledError) as exc:
        if isinstance(exc, asyncio.CancelledError) and not wf.ctx.cancelled:
            raise  # shutdown, not a cancel of this job
        await asyncio.to_thread(cancel_members, wf)
        await asyncio.to_thread(_decide, wf, task, "cancelled", True)
        return await asyncio.to_thread(_compensate, wf, task)
    except (NonDeterminismError, StopReplay):
        raise
    except Exception as exc:
        if not _is_final(wf, task, exc):
            raise
        await asyncio.to_thread(_decide, wf, task, f"{type(exc).__name__}: {exc}", False)
        return await asyncio.to_thread(_compensate, wf, task, exc)
    await asyncio.to_thread(_finish, wf, WorkflowStatus.SUCCEEDED)
    return result


def _collect(body: Callable[[], Any]) -> None:
    """Replay the recorded part of the body to learn its compensations; run nothing new."""
    # the replay stops at the first call without a record, or where it failed
    with contextlib.suppress(StopReplay, Exception):
        body()


# -- durable status --------------------------------------------------------------------


def _set(wf: Workflow, status: WorkflowStatus, *, cause: str | None = None,
         cancelled: bool | None = None, last_attempt: int | None = None,
         extend: int | None = None) -> None:
    flag = wf.run.cancelled if cancelled is None else cancelled
    label = "decide" if status is WorkflowStatus.COMPENSATING else "finish"
    boundary(wf.id, f"before:{label}:{status}")
    ok = repeat_on_storage_error(lambda: wf.runtime.store.workflows.run_set(
        wf.id, wf.ctx.attempt, status, cancelled=flag, cause=cause, last_attempt=last_attempt,
        extend_attempts=extend))
    if not ok:
        raise LeaseLost(f"workflow {wf.id} attempt {wf.ctx.attempt} lost its lease before "
                        f"recording status {status!r}")
    boundary(wf.id, f"after:{label}:{status}")
    wf.run = replace(wf.run, status=status, cancelled=flag, cause=cause or wf.run.cause)
    if extend:
        wf.run = replace(wf.run, max_attempts=max(wf.run.max_attempts,
                                                  wf.ctx.counted_attempt + extend))


def _decide(wf: Workflow, task: Task[Any, Any], cause: str, cancelled: bool) -> None:
    """Record the decision to compensate, with a fresh attempt budget to do it in."""
    wf.runtime.events.emit("workflow.compensating", workflow_id=wf.id, cause=cause,
                       cancelled=cancelled)
    _set(wf, WorkflowStatus.COMPENSATING, cause=cause, cancelled=cancelled,
         extend=max(task.options.max_attempts, COMPENSATION_ATTEMPTS))


def _finish(wf: Workflow, status: WorkflowStatus) -> None:
    _set(wf, status)


def _compensate(wf: Workflow, task: Task[Any, Any], cause: BaseException | None = None) -> Any:
    """Undo completed steps in reverse order, each recorded once done; then the final status.

    A compensation that raises is retried after the workflow's backoff (at least once each,
    in order); after :data:`COMPENSATION_ATTEMPTS` tries the workflow ends ``failed``.
    """
    budget = max(task.options.max_attempts, COMPENSATION_ATTEMPTS)
    for name, undo, result in reversed(wf.compensations):
        step_name = f"compensate:{name}"
        rec = wf.history.get(step_name)
        if rec is not None and rec.status is StepStatus.DONE:
            continue
        now = wf.runtime.clock.now()
        if rec is not None and rec.wake_at is not None and now < rec.wake_at:
            raise Snooze(until=rec.wake_at, reason=f"workflow {step_name} backing off")
        try:
            outcome = undo(result)
        except Exception as exc:
            # Retried like a step with its own policy (durably, without spending the job's
            # attempts), so compensations stay in order and each runs at least once.
            tries = (rec.tries if rec is not None else 0) + 1
            log.error("workflow %s: %s failed (try %d of %d): %s", wf.id, step_name, tries,
                      budget, exc)
            if tries >= budget:
                _set(wf, WorkflowStatus.FAILED,
                     cause=f"{step_name} failed: {type(exc).__name__}: {exc}")
                raise CompensationFailed(
                    f"workflow {wf.id} ({wf.run.cause}): {step_name} failed {tries} times: "
                    f"{type(exc).__name__}: {exc}") from exc
            wake = now + timedelta(seconds=task.options.retry.delay(tries, exc))
            wf._record(step_name, StepStatus.SLEEPING, None, wake, kind="compensate", tries=tries,
                       started_at=now)
            raise Snooze(until=wake, reason=f"workflow {step_name} failed ({exc}); retrying"
                         ) from exc
        wf._record(step_name, StepStatus.DONE, _json_or_none(outcome, step_name, wf),
                   kind="compensate", started_at=now, tries=rec.tries if rec is not None else 0)
    wf.runtime.events.emit("workflow.compensated", workflow_id=wf.id, cause=wf.run.cause)
    if wf.run.cancelled:
        _finish(wf, WorkflowStatus.CANCELLED)
    elif wf.compensations:
        _finish(wf, WorkflowStatus.COMPENSATED)
    else:
        _finish(wf, WorkflowStatus.FAILED)
    _reraise_final(wf, cause)


def _json_or_none(value: Any, what: str, wf: Workflow) -> str | None:
    try:
        return encode_json(value, what, wf._step_limit())
    except Exception:
        return None  # a compensation's return value is informative only


def _reraise_final(wf: Workflow, cause: BaseException | None = None) -> Any:
    status, why = wf.run.status, wf.run.cause
    if status is WorkflowStatus.CANCELLED:
        wf.ctx._request_cancel()  # the executor records a cancel only if it was asked for
        raise JobCancelled(f"workflow {wf.id} was cancelled; its compensations ran")
    if status is WorkflowStatus.COMPENSATED:
        raise WorkflowCompensated(f"workflow {wf.id} failed ({why}) and was compensated: "
                                  + ", ".join(f"compensate:{n}"
                                              for n, _, _ in reversed(wf.compensations))
                                  ) from cause
    raise WorkflowFailed(f"workflow {wf.id} failed for good: {why}") from cause
