"""What a workflow body sees: recorded steps, durable sleep, events, compensation.

A workflow is an ordinary job whose body is replayed from the top on every run.
Each ``step`` runs its function once and records its JSON result; a replay returns
the recorded result without running it again. ``sleep`` and ``wait_for_event``
suspend the job (``Snooze``: back to ``scheduled`` without spending an attempt)
and the replay continues past them once their time or event has come. The body
between steps must therefore be deterministic: take decisions from step results,
not from the clock or random numbers (use a step for those).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from ..context import JobContext
from ..errors import Snooze
from ..payload import Limit, encode_json
from ..retry import repeat_on_storage_error
from ..store.rows import StepRecord
from .errors import EventTimeout, LeaseLost, WorkflowError

#: How far ahead a wait without a timeout schedules its job (an event wakes it sooner).
FOREVER = timedelta(days=3650)


def _seconds(value: float | timedelta) -> timedelta:
    return value if isinstance(value, timedelta) else timedelta(seconds=float(value))


class Workflow:
    """Passed as the first argument of an ``@app.workflow`` function."""

    def __init__(self, ctx: JobContext) -> None:
        self.ctx = ctx
        self.app = ctx.app
        self.id = ctx.job_id
        self._store = ctx.app.store
        self.history: dict[str, StepRecord] = self._store.workflow_steps_get(ctx.job_id)
        self._used: set[str] = set()
        self.compensations: list[tuple[str, Callable[..., Any], Any]] = []

    # -- recording ----------------------------------------------------------------

    def _claim_name(self, name: str) -> StepRecord | None:
        if not isinstance(name, str) or not name:
            raise WorkflowError("a step needs a non-empty name that is stable across replays")
        if name in self._used:
            raise WorkflowError(f"workflow step name {name!r} is used twice in one run; "
                                "give each step its own name (e.g. f'charge-{i}')")
        self._used.add(name)
        return self.history.get(name)

    def _step_limit(self) -> Limit:
        return self.ctx.app.settings.limit("max_step_result_bytes")

    def _record(self, name: str, status: str, result_json: str | None,
                wake_at: datetime | None = None) -> None:
        # An upsert fenced by attempt: safe to repeat after a lost reply.
        if not repeat_on_storage_error(lambda: self._store.workflow_step_record(
                self.id, self.ctx.attempt, name, status, result_json, wake_at)):
            raise LeaseLost(f"workflow {self.id} attempt {self.ctx.attempt} lost its lease "
                            f"before recording step {name!r}")

    # -- the API -----------------------------------------------------------------------

    def step(self, name: str, fn: Callable[..., Any], *args: Any,
             compensate: Callable[[Any], Any] | None = None, **kwargs: Any) -> Any:
        """Run ``fn(*args, **kwargs)`` once, record its JSON result, return it.

        ``compensate(result)`` is called (once) if the workflow later fails for good.
        """
        record = self._claim_name(name)
        if record is not None and record.status == "done":
            result = record.result
        else:
            self.ctx.raise_if_cancelled()
            result = fn(*args, **kwargs)
            self._record(name, "done", encode_json(result, f"workflow step {name!r}: result",
                                                     self._step_limit()))
        if compensate is not None:
            self.compensations.append((name, compensate, result))
        return result

    def now(self, name: str) -> datetime:
        """The current time, recorded: a replay sees the same instant."""
        iso = self.step(name, lambda: self.app.clock.now().isoformat())
        return datetime.fromisoformat(iso)

    def sleep(self, name: str, duration: float | timedelta) -> None:
        """Durable sleep: the job waits in the database, holding no worker, then resumes."""
        record = self._claim_name(name)
        now = self.app.clock.now()
        if record is not None and record.status == "done":
            return
        if record is None:
            wake_at = now + _seconds(duration)
            self._record(name, "sleeping", None, wake_at)
        else:
            wake_at = record.wake_at or now
        if now >= wake_at:
            self._record(name, "done", None)
            return
        raise Snooze(until=wake_at, reason=f"workflow sleeping in step {name!r}")

    def wait_for_event(self, name: str, *, timeout: float | timedelta | None = None,
                       step: str | None = None) -> Any:
        """Wait (durably) for ``app.send_event(workflow_id, name, payload)``; return the payload.

        Raises :class:`EventTimeout` if ``timeout`` passes first (the same on every replay).
        """
        step_name = step or f"event:{name}"
        record = self._claim_name(step_name)
        if record is not None and record.status == "done":
            return self._event_result(name, record.result)
        took, payload = self._store.workflow_event_take(self.id, self.ctx.attempt, name,
                                                        step_name)
        if took:
            return payload
        now = self.app.clock.now()
        if record is None:
            deadline = now + _seconds(timeout) if timeout is not None else None
            self._record(step_name, "waiting", None, deadline)
        else:
            deadline = record.wake_at
        if deadline is not None and now >= deadline:
            self._record(step_name, "done",
                         encode_json({"timed_out": True}, step_name, self._step_limit()))
            return self._event_result(name, {"timed_out": True})
        raise Snooze(until=deadline or now + FOREVER,
                     reason=f"workflow waiting for event {name!r}")

    @staticmethod
    def _event_result(name: str, stored: Any) -> Any:
        if isinstance(stored, dict) and stored == {"timed_out": True}:
            raise EventTimeout(f"event {name!r} did not arrive in time")
        return stored
