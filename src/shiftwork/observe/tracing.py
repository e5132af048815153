"""OpenTelemetry spans around enqueue and execution, when ``opentelemetry-api`` is installed.

The enqueue span's context travels in the job's meta (``meta["otel"]``, W3C
``traceparent``/``tracestate``), so the execution span, on whatever worker claims the
job, is a child of the request that enqueued it. Without the package both helpers
are no-ops costing one ``if``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shiftwork.model.new_job import NewJob
    from shiftwork.model.records import ClaimedJob

try:
    from opentelemetry import propagate, trace
    from opentelemetry.trace import SpanKind
except ImportError:  # the optional extra is not installed
    trace = None  # type: ignore[assignment]

META_KEY = "otel"
_SCOPE = "shiftwork"


def recording() -> bool:
    """False until an SDK tracer provider is installed: the API's default provider only
    hands out no-op spans, and building one per job costs more than a no-op job."""
    if trace is None:
        return False
    provider = trace.get_tracer_provider()
    return not isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider))


@contextmanager
def enqueue_span(rows: list[NewJob]) -> Iterator[list[NewJob]]:
    """A PRODUCER span around inserting ``rows``; yields the rows carrying its context."""
    if not rows or not recording():
        yield rows
        return
    tasks = sorted({r.task for r in rows})
    tracer = trace.get_tracer(_SCOPE)
    with tracer.start_as_current_span(
        f"shiftwork enqueue {tasks[0] if len(tasks) == 1 else 'batch'}", kind=SpanKind.PRODUCER,
        attributes={"messaging.system": "shiftwork", "messaging.batch.message_count": len(rows),
                    "shiftwork.tasks": ",".join(tasks)[:500],
                    "messaging.destination.name": ",".join(sorted({r.queue for r in rows}))},
    ) as span:
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        if not carrier or not span.is_recording():
            yield rows
            return
        yield [_with_context(r, carrier) for r in rows]


def _with_context(row: NewJob, carrier: dict[str, str]) -> NewJob:
    meta = json.loads(row.meta_json) if row.meta_json else {}
    if META_KEY in meta:  # the caller set its own context: keep it
        return row
    meta[META_KEY] = carrier
    return replace(row, meta_json=json.dumps(meta, separators=(",", ":")))


@contextmanager
def execution_span(job: ClaimedJob | dict[str, Any]) -> Iterator[Any]:
    """A CONSUMER span around running one attempt, child of the enqueue span if any.

    ``job`` is a claimed job, or its dict form in a process-executor child.
    """
    if not recording():
        yield None
        return
    get = job.get if isinstance(job, dict) else lambda k: getattr(job, k)
    meta = get("meta")
    carrier = meta.get(META_KEY) if isinstance(meta, dict) else None
    parent = propagate.extract(carrier) if isinstance(carrier, dict) else None
    tracer = trace.get_tracer(_SCOPE)
    with tracer.start_as_current_span(
        f"shiftwork run {get('task')}", context=parent, kind=SpanKind.CONSUMER,
        attributes={"messaging.system": "shiftwork", "messaging.message.id": str(get("id")),
                    "messaging.destination.name": str(get("queue")),
                    "shiftwork.task": str(get("task")),
                    "shiftwork.attempt": int(get("attempt") or 0)},
    ) as span:
        yield span
