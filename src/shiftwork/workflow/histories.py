"""Recorded histories, exported as JSON and replayed against the current code.

A changed workflow body is otherwise caught only when an instance replays it in
production (:class:`NonDeterminismError`). Exported histories (``shiftwork workflows
export``) replay here without a database and without running a step: every recorded
call returns its record, and the replay stops at the first call with none (the
frontier, where a real run would do new work). What diverges is reported with the
place and the call, as a run would raise it.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from shiftwork.core.errors import ConfigurationError
from shiftwork.core.states import StepStatus, WorkflowStatus
from shiftwork.jobs.context import JobContext
from shiftwork.jobs.sealing import open_job
from shiftwork.model.records import StepRecord, WorkflowRun
from shiftwork.workflow.aio import AsyncWorkflow
from shiftwork.workflow.context import Workflow
from shiftwork.workflow.errors import (
    ChildFailed,
    EventTimeout,
    NonDeterminismError,
    StepFailed,
    StopReplay,
)

if TYPE_CHECKING:
    from collections.abc import Iterable

    from shiftwork.runtime import Runtime

#: The export's format name; a file of another format is refused.
FORMAT = "shiftwork.workflow-histories/1"
_TIMES = ("wake_at", "updated_at", "started_at")


@dataclass(frozen=True)
class History:
    """One workflow instance's recorded calls, with what it was started with."""

    workflow_id: int
    task: str
    version: str | None
    status: str | None
    args: list[Any]
    kwargs: dict[str, Any]
    steps: dict[str, StepRecord]


@dataclass(frozen=True)
class Replayed:
    """What replaying one history found: ``ok``, or what diverged and where."""

    history: History
    outcome: str  # "completed" | "frontier" | "diverged" | "raised"
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.outcome in ("completed", "frontier")

    def __str__(self) -> str:
        where = f"workflow {self.history.workflow_id} ({self.history.task})"
        return f"{where}: {self.outcome}" + (f": {self.detail}" if self.detail else "")


@dataclass(frozen=True)
class ReplayReport:
    """Every history's result; ``ok`` when none diverged or raised."""

    results: list[Replayed] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)

    @property
    def problems(self) -> list[Replayed]:
        return [r for r in self.results if not r.ok]

    def __str__(self) -> str:
        bad = self.problems
        head = (f"{len(self.results)} histories replayed, "
                f"{len(bad) or 'none'} diverged or raised")
        return "\n".join([head, *(f"  {r}" for r in bad)])


# -- export ---------------------------------------------------------------------------


def read_history(rt: Runtime, workflow_id: int) -> History:
    """The recorded history of one workflow instance, read from the database."""
    job = open_job(rt.keys, rt.store.jobs.get(workflow_id))  # an encrypted one's arguments
    run = rt.store.workflows.run_read(workflow_id)
    if run is None and getattr(rt.registry.tasks.get(job.task), "workflow_version",
                               None) is None:
        raise ConfigurationError(f"job {workflow_id} ({job.task}) is not a workflow")
    return History(workflow_id=job.id, task=job.task, version=run.version if run else None,
                   status=run.status.value if run else None, args=list(job.args),
                   kwargs=dict(job.kwargs), steps=rt.store.workflows.steps_get(workflow_id))


def export(histories: Iterable[History]) -> dict[str, Any]:
    """Histories as one JSON document (``load`` reads it back)."""
    return {"format": FORMAT, "workflows": [_history_json(h) for h in histories]}


def _history_json(h: History) -> dict[str, Any]:
    steps = []
    for rec in h.steps.values():
        item = asdict(rec)
        item["status"] = rec.status.value
        for key in _TIMES:
            value = item[key]
            item[key] = value.isoformat() if value is not None else None
        steps.append(item)
    return {"id": h.workflow_id, "task": h.task, "version": h.version, "status": h.status,
            "args": h.args, "kwargs": h.kwargs, "steps": steps}


def load(document: str | bytes | dict[str, Any]) -> list[History]:
    """Histories from an export (its text or the parsed document); a malformed one is
    refused with what is wrong and where."""
    data = json.loads(document) if isinstance(document, (str, bytes)) else document
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise ConfigurationError(f"not a workflow history export: expected format {FORMAT!r}, "
                                 f"found {str(found)[:80]!r}")
    out = []
    for i, item in enumerate(data.get("workflows") or []):
        try:
            steps = {}
            for s in item["steps"]:
                rec = StepRecord(**{**s, **{k: _instant(s.get(k)) for k in _TIMES}})
                steps[rec.name] = rec
            out.append(History(workflow_id=int(item["id"]), task=str(item["task"]),
                               version=item.get("version"), status=item.get("status"),
                               args=list(item.get("args") or []),
                               kwargs=dict(item.get("kwargs") or {}), steps=steps))
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigurationError(f"workflow history {i} of the export is malformed: "
                                     f"{type(exc).__name__}: {exc}") from None
    return out


def _instant(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value is not None else None


# -- replay ---------------------------------------------------------------------------


def replay(rt: Runtime, history: History) -> Replayed:
    """Run the current code of ``history``'s workflow against its record; no step runs
    and nothing is written (the body stops at the first call the history lacks)."""
    task = rt.registry.get_task(history.task)
    body = getattr(task.fn, "__wrapped__", None)
    if getattr(task, "workflow_version", None) is None or body is None:
        raise ConfigurationError(f"task {history.task!r} is not a workflow")
    ctx = JobContext(runtime=rt, job_id=history.workflow_id, task=history.task,
                     queue=task.options.queue, attempt=0,
                     max_attempts=task.options.max_attempts)
    run = WorkflowRun(status=WorkflowStatus.RUNNING, version=history.version or "",
                      cancelled=False, cause=None, last_attempt=None, cancel_requested=False,
                      max_attempts=task.options.max_attempts)
    wf = Workflow(ctx, run, history.steps, verify_only=True)
    try:
        if inspect.iscoroutinefunction(body):
            asyncio.run(_run_async(body, wf, history))
        else:
            body(wf, *history.args, **history.kwargs)
        wf.check_complete()
    except StopReplay as stop:
        return Replayed(history, "frontier", f"stopped at {stop.args[0]!r}, the first call "
                                             "with no record" if stop.args else "")
    except NonDeterminismError as exc:
        return Replayed(history, "diverged", str(exc))
    except Exception as exc:
        if _recorded_failure(history, exc):  # the record's own outcome, raised again
            return Replayed(history, "completed", f"raised {type(exc).__name__}, as recorded")
        return Replayed(history, "raised", f"{type(exc).__name__}: {exc}")
    return Replayed(history, "completed")


async def _run_async(body: Any, wf: Workflow, history: History) -> None:
    await body(AsyncWorkflow(wf, asyncio.get_running_loop()), *history.args, **history.kwargs)


def _recorded_failure(history: History, exc: Exception) -> bool:
    """Whether ``exc`` is a failure the history records (a step failed for good, an
    event that timed out), which a replay raises again by design."""
    recorded = {r.outcome for r in history.steps.values() if r.status is StepStatus.DONE}
    return ((isinstance(exc, (StepFailed, ChildFailed)) and "failed" in recorded)
            or (isinstance(exc, EventTimeout) and "timed_out" in recorded))


def replay_all(rt: Runtime, histories: Iterable[History]) -> ReplayReport:
    return ReplayReport([replay(rt, h) for h in histories])
