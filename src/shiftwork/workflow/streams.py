"""``wf.write_stream`` / ``wf.close_stream``: values a workflow appends for readers.

Each write is a durable call of the body (kind ``stream``, named ``stream:<key>:<n>``,
``n`` counting this run's writes to that key): the value and its step record commit in
one transaction, fenced by attempt, so a replay finds the record and writes nothing. A
stream is bounded (``max_stream_values`` values, ``max_stream_value_bytes`` each) and
deleted with its workflow's job. Readers: jobs/stream_reader.py.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from shiftwork.core.backoff import repeat_on_storage_error
from shiftwork.core.errors import LeaseLost, PayloadError
from shiftwork.core.payload import MAX_EVENT_NAME, check_label, encode_json
from shiftwork.core.states import StepStatus
from shiftwork.workflow.errors import StopReplay, WorkflowError
from shiftwork.workflow.hooks import boundary
from shiftwork.workflow.replay import digest

if TYPE_CHECKING:
    from shiftwork.jobs.context import JobContext
    from shiftwork.model.records import StepRecord
    from shiftwork.runtime import Runtime
    from shiftwork.store.base import Store


class Workflow(Protocol):
    """What a stream write needs of the workflow (workflow/context.py's Workflow: it calls
    in here, so it is named by what it offers, not imported)."""

    _cancel_requested: bool
    _streams: dict[str, int]
    compensating: bool
    verify_only: bool

    @property
    def id(self) -> int: ...

    @property
    def ctx(self) -> JobContext: ...

    @property
    def runtime(self) -> Runtime: ...

    @property
    def _store(self) -> Store: ...

    @property
    def cancel_requested(self) -> bool: ...

    def _enter(self, name: str, kind: str, digest_: str | None
               ) -> tuple[StepRecord | None, int]: ...


class StreamError(WorkflowError):
    """A stream write refused: the stream is closed, or holds the most values allowed."""


def check_key(key: Any) -> str:
    """A stream key is a label like an event name (non-empty text, at most 200 chars)."""
    if not isinstance(key, str):
        raise WorkflowError(f"a stream key must be a string, not {key!r}")
    try:
        check_label(key, "stream key", MAX_EVENT_NAME)
    except PayloadError as exc:
        raise WorkflowError(str(exc)) from None
    return key


def write(wf: Workflow, key: str, value: Any) -> int:
    """Append ``value`` to the stream ``key``; its offset (0 for the first value)."""
    check_key(key)
    n = wf._streams.get(key, 0)
    wf._streams[key] = n + 1
    body = encode_json(value, f"stream {key!r}: value",
                       wf.runtime.settings.limit("max_stream_value_bytes"))
    return _append(wf, key, f"stream:{key}:{n}", body, digest((key, value), {}))


def close(wf: Workflow, key: str) -> None:
    """Close the stream ``key``: its readers end once they have read every value."""
    check_key(key)
    _append(wf, key, f"stream:{key}:close", None, digest((key,), {}))


def _append(wf: Workflow, key: str, name: str, body: str | None, d: str) -> int:
    rec, pos = wf._enter(name, "stream", d)
    if rec is not None and rec.status is StepStatus.DONE:
        return int(rec.result) if isinstance(rec.result, int) else -1
    if wf.compensating or wf.verify_only:  # (_enter stops these first; kept for clarity)
        raise StopReplay(name)
    started: datetime = wf.runtime.clock.now()
    boundary(wf.id, f"before:{name}:done")
    got = repeat_on_storage_error(lambda: wf._store.streams.append(
        wf.id, wf.ctx.attempt, key, body, closed=body is None, step=name, position=pos,
        digest=d, started_at=started, max_values=wf.runtime.settings.max_stream_values))
    if got is None:
        raise LeaseLost(f"workflow {wf.id} attempt {wf.ctx.attempt} lost its lease before "
                        f"writing {name!r}")
    boundary(wf.id, f"after:{name}:done")
    wf._cancel_requested = wf._cancel_requested or got.cancel_requested
    if got.seq is not None:
        return got.seq
    if body is None:
        return -1  # closing a closed stream: nothing to do
    if got.closed:
        raise StreamError(f"workflow {wf.id}: stream {key!r} is closed; nothing more can be "
                          "written to it")
    raise StreamError(f"workflow {wf.id}: stream {key!r} holds {got.length} values, the most "
                      "settings.max_stream_values allows")
