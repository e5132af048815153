"""What a workflow body sees: recorded steps, durable sleep, events, patches.

A workflow is an ordinary job whose body is replayed from the top on every run. Each
durable call (``step``, ``sleep``, ``wait_for_event``, ``wait_for_update``, ``patched``)
takes the next place
in the body's history: a recorded one returns its record (checked against the history,
see ``replay.py``), the first unrecorded one does its work and records it. The body
between calls must be deterministic: take decisions from step results, not from the
clock or random numbers (use a step for those).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, NoReturn

from shiftwork.core.backoff import Backoff, repeat_on_storage_error
from shiftwork.core.bounds import seconds as check_seconds
from shiftwork.core.errors import JobCancelled, LeaseLost, PayloadError
from shiftwork.core.payload import MAX_EVENT_NAME, MAX_STEP_NAME, Limit, check_label, encode_json
from shiftwork.core.states import StepStatus, WorkflowStatus
from shiftwork.jobs.context import JobContext
from shiftwork.model.records import StepRecord, WorkflowRun
from shiftwork.workflow.errors import (
    FOREVER,
    EventTimeout,
    StepFailed,
    StepNameError,
    StopReplay,
    Suspend,
    WorkflowError,
)
from shiftwork.workflow.hooks import boundary
from shiftwork.workflow.replay import Replay, digest

if TYPE_CHECKING:
    from shiftwork.store.base import Store

#: How far ahead a wait without a timeout schedules its job (an event wakes it sooner).
#: A step given ``retry=`` without ``max_attempts=`` gets this many tries.
STEP_ATTEMPTS = 3


#: set_state's stamp: position * STATE_STAMP_SPAN + the count of writes since that position
STATE_STAMP_SPAN = 1 << 32


def _plain(text: str) -> str:
    """A message as storable text: no NUL, no lone surrogate (jsonb refuses both)."""
    return text.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")


def _seconds(value: float | timedelta, what: str) -> timedelta:
    return timedelta(seconds=check_seconds(value, what))


def _check_name(name: str, what: str, max_chars: int) -> None:
    try:
        check_label(name, what, max_chars)
    except PayloadError as exc:
        raise StepNameError(str(exc)) from None


def _call(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
          timeout: float | None, name: str) -> Any:
    if timeout is None:
        return fn(*args, **kwargs)
    # A thread of its own so the step can be abandoned at its timeout (Python cannot stop
    # it: it runs on in the background, which is why steps must be idempotent).
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = fn(*args, **kwargs)
        except BaseException as exc:  # handed to the workflow's thread below
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True, name=f"shiftwork-step-{name}")
    t.start()
    t.join(timeout)
    if t.is_alive():
        raise TimeoutError(f"workflow step {name!r} timed out after {timeout}s")
    if "error" in box:
        raise box["error"]
    return box.get("result")


class Workflow:
    """Passed as the first argument of an ``@app.workflow`` function."""

    def __init__(self, ctx: JobContext, run: WorkflowRun, history: dict[str, StepRecord],
                 *, verify_only: bool = False) -> None:
        self.ctx = ctx
        self.runtime = ctx.runtime
        self.id = ctx.job_id
        self.run = run
        self.version = run.version
        self.history = history
        #: replaying an exported history (histories.py): stop at the first call with no
        #: record, before it does anything
        self.verify_only = verify_only
        self._replay = Replay(ctx.job_id, history)
        self._used: set[str] = set()
        self._cancel_requested = run.cancel_requested
        #: (step name, compensation, step result), in the order the steps completed
        self.compensations: list[tuple[str, Callable[[Any], Any], Any]] = []
        # replay only, to collect them
        self.compensating = run.status is WorkflowStatus.COMPENSATING
        #: (position, count) of the last set_state: its stamp's place in the body
        self._state_at = (-1, 0)
        #: writes to each stream so far in this run (their step names: streams.py)
        self._streams: dict[str, int] = {}

    @property
    def _store(self) -> Store:
        return self.runtime.store  # (looked up when used: a replay never opens it)

    @classmethod
    def begin(cls, ctx: JobContext, version: str) -> Workflow:
        """The workflow of this run: its recorded history, read once (the runner's)."""
        loaded = repeat_on_storage_error(
            lambda: ctx.runtime.store.workflows.begin(ctx.job_id, ctx.attempt, version))
        if loaded is None:
            raise LeaseLost(f"workflow {ctx.job_id} attempt {ctx.attempt} lost its lease "
                            "before it began")
        return cls(ctx, *loaded)

    # -- recording ----------------------------------------------------------------

    def _step_limit(self) -> Limit:
        return self.ctx.runtime.settings.limit("max_step_result_bytes")

    @property
    def cancel_requested(self) -> bool:
        """True once someone asked this workflow to cancel."""
        return self._cancel_requested or self.ctx.cancelled

    def _enter(self, name: str, kind: str, digest_: str | None) -> tuple[StepRecord | None, int]:
        if not isinstance(name, str) or not name:
            raise WorkflowError("a step needs a non-empty name that is stable across replays")
        _check_name(name, "workflow step name", MAX_STEP_NAME)
        if name in self._used:
            raise WorkflowError(f"workflow step name {name!r} is used twice in one run; "
                                "give each step its own name (e.g. f'charge-{i}')")
        self._used.add(name)
        pos = self._replay.position
        rec = self._replay.match(name, kind, digest_)
        # the frontier: new work would happen here
        if rec is None or rec.status is not StepStatus.DONE:
            if self.compensating or self.verify_only:
                raise StopReplay(name)
            if self.cancel_requested:
                raise JobCancelled(f"workflow {self.id} was cancelled; stopped at {name!r}")
        return rec, pos

    def _record(self, name: str, status: StepStatus, result_json: str | None,
                wake_at: datetime | None = None, **fields: Any) -> None:
        # An upsert fenced by attempt: safe to repeat after a lost reply.
        boundary(self.id, f"before:{name}:{status}")
        flag = repeat_on_storage_error(lambda: self._store.workflows.step_record(
            self.id, self.ctx.attempt, name, status, result_json, wake_at, **fields))
        if flag is None:
            raise LeaseLost(f"workflow {self.id} attempt {self.ctx.attempt} lost its lease "
                            f"before recording step {name!r}")
        boundary(self.id, f"after:{name}:{status}")
        self._cancel_requested = self._cancel_requested or flag

    # -- the API -----------------------------------------------------------------------

    def step(self, name: str, fn: Callable[..., Any], *args: Any,
             compensate: Callable[[Any], Any] | None = None, retry: Backoff | None = None,
             max_attempts: int | None = None, timeout: float | None = None,
             **kwargs: Any) -> Any:
        """Run ``fn(*args, **kwargs)`` at least once, record its JSON result, return it.

        ``compensate(result)`` is called if the workflow later fails for good or is
        cancelled. With ``retry=`` or ``max_attempts=`` the step retries itself (durably,
        holding no worker while it backs off) without spending the workflow's attempts;
        when its attempts are spent it raises :class:`StepFailed`, on every replay.
        ``timeout`` (seconds) abandons one try of the step.
        """
        if max_attempts is not None and (not isinstance(max_attempts, int)
                                         or isinstance(max_attempts, bool) or max_attempts < 1):
            raise WorkflowError(f"step {name!r}: max_attempts must be an integer >= 1, "
                                f"not {max_attempts!r}")
        if timeout is not None:
            timeout = _seconds(timeout, f"step {name!r}: timeout").total_seconds()
        if retry is not None and not isinstance(retry, Backoff):
            raise WorkflowError(f"step {name!r}: retry must be a shiftwork.Backoff, "
                                f"not {retry!r}")
        d = digest(args, kwargs)
        rec, pos = self._enter(name, "step", d)
        if rec is not None and rec.status is StepStatus.DONE:
            if rec.outcome == "failed":
                raise StepFailed(f"workflow step {name!r} failed for good: "
                                 f"{(rec.result or {}).get('message')}")
            result = rec.result
        else:
            result = self._run_step(name, fn, args, kwargs, rec, pos, d,
                                    retry, max_attempts, timeout)
        if compensate is not None:
            self.compensations.append((name, compensate, result))
        return result

    def _run_step(self, name: str, fn: Callable[..., Any], args: tuple[Any, ...],
                  kwargs: dict[str, Any], rec: StepRecord | None, pos: int, d: str,
                  retry: Backoff | None, max_attempts: int | None,
                  timeout: float | None) -> Any:
        now = self.runtime.clock.now()
        if rec is not None and rec.wake_at is not None and now < rec.wake_at:
            raise Suspend(rec.wake_at, f"workflow step {name!r} backing off")
        tries = rec.tries if rec is not None else 0
        fields: dict[str, Any] = {"position": pos, "kind": "step", "digest": d,
                                  "started_at": now}
        try:
            result = _call(fn, args, kwargs, timeout, name)
        except Exception as exc:
            if retry is None and max_attempts is None:
                raise  # the workflow's own retry policy decides
            policy = retry or Backoff()
            tries += 1
            if tries >= (max_attempts or STEP_ATTEMPTS) or not policy.retryable(exc):
                error = {"type": type(exc).__name__, "message": str(exc)[:2000]}
                self._record(name, StepStatus.DONE, encode_json(error, name, self._step_limit()),
                             outcome="failed",
                             tries=tries, **fields)
                raise StepFailed(f"workflow step {name!r} failed for good after {tries} "
                                 f"tries: {type(exc).__name__}: {exc}") from exc
            wake = now + timedelta(seconds=policy.delay(tries, exc))
            self._record(name, StepStatus.SLEEPING, None, wake, tries=tries, **fields)
            raise Suspend(wake, f"workflow step {name!r} failed ({exc}); retrying") from exc
        self._record(name, StepStatus.DONE, encode_json(result, f"workflow step {name!r}: result",
                                                      self._step_limit()),
                     tries=tries, **fields)
        return result

    def now(self, name: str) -> datetime:
        """The current time, recorded: a replay sees the same instant."""
        iso = self.step(name, lambda: self.runtime.clock.now().isoformat())
        return datetime.fromisoformat(iso)

    def sleep(self, name: str, duration: float | timedelta) -> None:
        """Durable sleep: the job waits in the database, holding no worker, then resumes."""
        delta = _seconds(duration, f"sleep {name!r}: duration")
        rec, pos = self._enter(name, "sleep", None)
        if rec is not None and rec.status is StepStatus.DONE:
            return
        now = self.runtime.clock.now()
        fields: dict[str, Any] = {"position": pos, "kind": "sleep", "started_at": now}
        if rec is None:
            wake_at = now + delta
            self._record(name, StepStatus.SLEEPING, None, wake_at, **fields)
            if self._cancel_requested:  # the record's statement saw the cancel
                raise JobCancelled(f"workflow {self.id} was cancelled; stopped at {name!r}")
        else:
            wake_at = rec.wake_at or now
        if now >= wake_at:
            self._record(name, StepStatus.DONE, None, wake_at, **fields)
            return
        raise Suspend(wake_at, f"workflow sleeping in step {name!r}")

    def wait_for_event(self, name: str, *, timeout: float | timedelta | None = None,
                       step: str | None = None) -> Any:
        """Wait (durably) for ``app.send_event(workflow_id, name, payload)``; return the payload.

        Raises :class:`EventTimeout` if ``timeout`` passes first (recorded as a timeout,
        apart from any payload, so every replay raises it too).
        """
        _check_name(name, "event name", MAX_EVENT_NAME)
        delta = _seconds(timeout, f"wait {name!r}: timeout") if timeout is not None else None
        step_name = step or f"event:{name}"
        rec, pos = self._enter(step_name, "wait", None)
        if rec is not None and rec.status is StepStatus.DONE:
            if rec.outcome == "timed_out":
                raise EventTimeout(f"event {name!r} did not arrive in time")
            return rec.result
        now = self.runtime.clock.now()
        boundary(self.id, f"before:{step_name}:take")
        took, payload = self._store.workflows.event_take(
            self.id, self.ctx.attempt, name, step_name, position=pos,
            started_at=rec.started_at if rec else now)
        boundary(self.id, f"after:{step_name}:take")
        if took:
            return payload
        fields: dict[str, Any] = {"position": pos, "kind": "wait", "started_at": now}
        if rec is None:
            deadline = now + delta if delta is not None else None
            self._record(step_name, StepStatus.WAITING, None, deadline, **fields)
            if self._cancel_requested:
                raise JobCancelled(f"workflow {self.id} was cancelled; stopped at {step_name!r}")
        else:
            deadline = rec.wake_at
        if deadline is not None and now >= deadline:
            self._record(step_name, StepStatus.DONE, None, deadline, outcome="timed_out", **fields)
            raise EventTimeout(f"event {name!r} did not arrive in time")
        raise Suspend(deadline or now + FOREVER, f"workflow waiting for event {name!r}")

    # -- talking to the workflow: queries and updates (workflow/talk.py) ---------------

    def set_state(self, key: str, value: Any) -> None:
        """Publish ``value`` (JSON) under ``key``: ``handle.query(key)`` and
        ``app.workflows.state(id)`` read it from any process, without running this code.

        Not a step: it takes no place in the history. Each write is stamped with its place
        in the body, so a replay (which makes the same calls again) neither writes the
        earlier values again nor moves the state back.
        """
        _check_name(key, "workflow state key", MAX_STEP_NAME)
        body = encode_json(value, f"workflow state {key!r}",
                           self.runtime.settings.limit("max_workflow_state_bytes"))
        pos = self._replay.position
        at, count = self._state_at
        self._state_at = (pos, count + 1 if at == pos else 1)
        if self.verify_only or pos < self._replay.end:
            return  # replaying: the run that went past here wrote it
        stamp = pos * STATE_STAMP_SPAN + self._state_at[1]
        repeat_on_storage_error(lambda: self._store.workflows.state_set(
            self.id, self.ctx.attempt, key, body, stamp))

    def wait_for_update(self, name: str, handler: Callable[[Any], Any] | None = None, *,
                        timeout: float | timedelta | None = None,
                        step: str | None = None) -> Any:
        """Wait (durably) for ``handle.update(name, payload)`` and handle it.

        ``handler(payload)`` (default: accept the payload as it is) returns the update's
        result: the caller gets it, and so does this call (recorded: on a replay the
        handler does not run again). A handler that raises rejects the update: the caller
        gets :class:`UpdateRejected`, nothing is recorded, and this call goes on waiting
        for the next update ``name`` (so a handler that rejects must change nothing).
        The result is recorded as this call's step in the transaction that resolves the
        update: a crash before it runs the handler again (make it idempotent, like a
        step); after it, the result is read back. Raises :class:`EventTimeout` if
        ``timeout`` passes first.
        """
        _check_name(name, "update name", MAX_EVENT_NAME)
        if handler is not None and not callable(handler):
            raise WorkflowError(f"update {name!r}: handler must be callable, not {handler!r}")
        delta = _seconds(timeout, f"update {name!r}: timeout") if timeout is not None else None
        step_name = step or f"update:{name}"
        rec, pos = self._enter(step_name, "update", None)
        if rec is not None and rec.status is StepStatus.DONE:
            if rec.outcome == "timed_out":
                raise EventTimeout(f"update {name!r} did not arrive in time")
            return rec.result
        now = self.runtime.clock.now()
        started = (rec.started_at if rec is not None else None) or now
        while True:
            got = repeat_on_storage_error(
                lambda: self._store.workflows.update_next(self.id, name))
            if got is None:
                break
            handled, result = self._handle_update(name, step_name, pos, started, got, handler)
            if handled:
                return result
        fields: dict[str, Any] = {"position": pos, "kind": "update", "started_at": now}
        if rec is None:
            deadline = now + delta if delta is not None else None
            self._record(step_name, StepStatus.WAITING, None, deadline, **fields)
            if self._cancel_requested:
                raise JobCancelled(f"workflow {self.id} was cancelled; stopped at {step_name!r}")
        else:
            deadline = rec.wake_at
        if deadline is not None and now >= deadline:
            self._record(step_name, StepStatus.DONE, None, deadline, outcome="timed_out",
                         **fields)
            raise EventTimeout(f"update {name!r} did not arrive in time")
        raise Suspend(deadline or now + FOREVER, f"workflow waiting for update {name!r}")

    def _handle_update(self, name: str, step_name: str, pos: int, started: datetime,
                       got: tuple[int, Any], handler: Callable[[Any], Any] | None
                       ) -> tuple[bool, Any]:
        """Run the handler on one pending update and resolve it: (accepted, result)."""
        update_id, payload = got
        boundary(self.id, f"before:{step_name}:handle")
        try:
            result = handler(payload) if handler is not None else payload
            body = encode_json(result, f"update {name!r}: result", self._step_limit())
        except Exception as exc:  # a rejection: the caller's error, not the workflow's
            error = json.dumps({"type": type(exc).__name__,
                                "message": _plain(str(exc))[:2000]})
            boundary(self.id, f"before:{step_name}:rejected")
            repeat_on_storage_error(lambda: self._store.workflows.update_resolve(
                self.id, self.ctx.attempt, update_id, accepted=False, result_json=None,
                error_json=error, step=step_name))
            boundary(self.id, f"after:{step_name}:rejected")
            return False, None
        boundary(self.id, f"before:{step_name}:accepted")
        done = repeat_on_storage_error(lambda: self._store.workflows.update_resolve(
            self.id, self.ctx.attempt, update_id, accepted=True, result_json=body, error_json=None,
            step=step_name, position=pos, started_at=started))
        boundary(self.id, f"after:{step_name}:accepted")
        if not done:  # resolved already: by this attempt, if a reply was lost and repeated
            out = self._store.workflows.update_read(update_id)
            if out is None or out.status != "accepted":
                return False, None
            return True, out.result
        return True, result

    # -- children and parallel steps (workflow/children.py) ----------------------------

    def child(self, workflow: Any, *args: Any, name: str | None = None, **kwargs: Any) -> Any:
        """Run the workflow ``workflow(*args, **kwargs)`` as a child job; wait for it
        durably and return its result. Its failure raises :class:`ChildFailed` here.

        Enqueued once (even across crashes and replays); ``name`` (default
        ``child:<task name>``) is its place in this workflow's history.
        """
        from shiftwork.jobs.task import Task
        from shiftwork.workflow.children import join

        if not isinstance(workflow, Task) or getattr(workflow, "workflow_version", None) is None:
            raise WorkflowError(f"wf.child needs a workflow registered with @app.workflow, "
                                f"not {workflow!r} (run a plain task with wf.parallel)")
        step = name or f"child:{workflow.name}"
        return join(self, step, "child", [(step, workflow, args, kwargs)])[0]

    def call(self, name: str, task: Any, *args: Any, **kwargs: Any) -> Any:
        """One branch of :meth:`parallel`: ``task(*args, **kwargs)`` run as a job."""
        from shiftwork.workflow.children import check_call

        return check_call(name, task, args, kwargs)

    def parallel(self, *calls: Any, name: str | None = None) -> list[Any]:
        """Run ``wf.call(...)`` branches as jobs at once; wait for all; results in order.

        Each branch is enqueued once and its result recorded once. If any fails, the others
        still finish first, then :class:`ChildFailed` is raised (carrying every failure).
        """
        from shiftwork.workflow.children import Call, join

        if not calls or not all(isinstance(c, Call) for c in calls):
            raise WorkflowError("wf.parallel takes one or more wf.call(name, task, ...) "
                                "branches")
        labels = [c.name for c in calls]
        if len(set(labels)) != len(labels):
            raise WorkflowError(f"wf.parallel: branch names must differ, got {labels}")
        step = name or "parallel:" + ",".join(labels)
        if name is None and len(step) > 120:  # many branches: a short, stable name
            step = f"parallel:{labels[0]}..{labels[-1]}({len(labels)})"
        return join(self, step, "parallel", [(c.name, c.task, c.args, c.kwargs)
                                             for c in calls])

    # -- streams and continue-as-new (workflow/streams.py, workflow/continuing.py) --------

    def write_stream(self, key: str, value: Any) -> int:
        """Append ``value`` (JSON) to the stream ``key``, durably and once (a replay writes
        nothing again); returns its offset. Readers: ``handle.read_stream(key)``."""
        from shiftwork.workflow.streams import write

        return write(self, key, value)

    def close_stream(self, key: str) -> None:
        """Close the stream ``key``: its readers end after its last value."""
        from shiftwork.workflow.streams import close

        close(self, key)

    def continue_as_new(self, *args: Any, **kwargs: Any) -> NoReturn:
        """End this run and start the next one, same workflow id, with these arguments
        and an empty history (Temporal's continue-as-new): what bounds a looping
        workflow's history."""
        from shiftwork.workflow.continuing import continue_as_new

        continue_as_new(self, args, kwargs)

    # -- versioning ----------------------------------------------------------------

    def patched(self, patch_id: str) -> bool:
        """True on the new code path, False on the old one (the Temporal/DBOS idiom)::

            if wf.patched("charge-v2"):
                wf.step("charge-v2", charge_with_tax, order)
            else:
                wf.step("charge", charge, order)

        New instances (and in-flight ones that have not reached this place yet) take the
        new path and record a marker; instances whose history already went past this
        place on the old code keep the old path. Retire it with :meth:`deprecate_patch`.
        """
        marker = self._patch_marker(patch_id)
        if marker not in self.history and self._replay.passed():
            self._used.add(marker)
            return False  # the history went past here on the old code: no place taken
        rec, pos = self._enter(marker, "patch", None)
        if rec is None:
            self._record(marker, StepStatus.DONE, None, position=pos, kind="patch",
                         started_at=self.runtime.clock.now())
        return True

    def deprecate_patch(self, patch_id: str) -> None:
        """The old path is gone: accept histories with or without the patch's marker.

        Replace ``if wf.patched(x): new() else: old()`` by ``wf.deprecate_patch(x); new()``
        once no instance can take the old path; remove the call once none holds the marker.
        """
        marker = self._patch_marker(patch_id)
        if marker in self.history:
            self._enter(marker, "patch", None)
        else:
            self._used.add(marker)

    def _patch_marker(self, patch_id: str) -> str:
        if not isinstance(patch_id, str) or not patch_id:
            raise WorkflowError("a patch needs a non-empty id, e.g. wf.patched('charge-v2')")
        marker = f"patch:{patch_id}"
        if marker in self._used:
            raise WorkflowError(f"patch {patch_id!r} is checked twice in one run")
        return marker

    def check_complete(self) -> None:
        """The body returned: fail if it skipped steps its history records (the runner's)."""
        self._replay.check_complete()
