"""How the dashboard shows a workflow: what it waits for, and its steps as a timeline.

Pure functions over the records the store returns (no I/O), so the list, the page and
their tests read the same words.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from shiftwork.core.states import FINAL, JobState, StepStatus, WorkflowStatus
from shiftwork.model.records import StepRecord, WorkflowLine, WorkflowLive
from shiftwork.observe.text import format_age, format_time

#: The width of the timeline's coordinate space (the SVG scales it to the page).
SPAN = 1000
FINISHED = (WorkflowStatus.SUCCEEDED, WorkflowStatus.FAILED, WorkflowStatus.COMPENSATED,
            WorkflowStatus.CANCELLED)


def waiting_for(kind: str | None, name: str | None, status: StepStatus | None,
                wake_at: datetime | None, result: Any, state: JobState,
                run_at: datetime) -> str:
    """What an unfinished workflow waits for, in a few words ("" when it waits on nothing:
    it runs, or it has finished)."""
    if state in FINAL or state is JobState.RUNNING:
        return ""
    if state is JobState.HELD:  # whatever it waits for, it waits to be released first
        return "release: it is on hold"
    until = f" (until {format_time(wake_at)} UTC)" if wake_at is not None else ""
    if status is StepStatus.WAITING:
        if kind == "wait" and name is not None:
            event = name.removeprefix("event:")
            return f"event {event!r}{until}"
        if kind == "update" and name is not None:
            return f"an update ({name}){until}"
        if kind in ("child", "parallel") and isinstance(result, dict):
            jobs = result.get("jobs") or []
            what = "child workflow" if kind == "child" else f"{len(jobs)} parallel jobs"
            return f"{what} {', '.join(str(j) for j in jobs[:5])}{'…' if len(jobs) > 5 else ''}"
        return f"step {name!r}{until}"
    if status is StepStatus.SLEEPING:
        if kind == "sleep":
            return f"a sleep until {format_time(wake_at)} UTC"
        return f"a retry of step {name!r} at {format_time(wake_at)} UTC"
    return f"its next run at {format_time(run_at)} UTC"


def line_waiting_for(line: WorkflowLine) -> str:
    return waiting_for(line.step_kind, line.step, line.step_status, line.step_wake_at,
                       line.step_result, line.state, line.run_at)


def duration(start: datetime, end: datetime | None, now: datetime) -> str:
    """How long it has run (to ``now`` while unfinished), as an age: ``3.0m``."""
    return format_age(((end or now) - start).total_seconds())


@dataclass(frozen=True)
class Bar:
    """One step on the timeline: where its bar starts and how wide it is (0..SPAN)."""

    step: StepRecord
    x: float
    width: float
    wait: bool  # a sleep, an event wait, a retry backoff or a child/parallel join: waited
    open: bool  # still waiting or sleeping now
    label: str  # the bar's title: the step, its kind, its times
    jobs: list[int]  # the jobs of a child or parallel step, linked


@dataclass(frozen=True)
class Timeline:
    start: datetime
    end: datetime
    bars: list[Bar]

    @property
    def length(self) -> str:
        return format_age((self.end - self.start).total_seconds())


def timeline(steps: list[StepRecord], status: WorkflowStatus | None, started: datetime,
             finished: datetime | None, now: datetime) -> Timeline:
    """A bar per step from its start to its record (to ``now`` while it still waits),
    on one time axis from the workflow's first run to its end (or ``now``)."""
    ended = status in FINISHED
    end = finished or now
    times = [t for s in steps for t in (s.started_at, s.updated_at) if t is not None]
    start = min([started, *times])
    end = max([end, *times])
    total = max((end - start).total_seconds(), 1e-6)
    bars = []
    previous = start
    for s in steps:
        begin = s.started_at or previous
        still = s.status is not StepStatus.DONE and not ended
        stop = end if still else (s.updated_at or begin)
        x = min((begin - start).total_seconds() / total * SPAN, SPAN - 2.0)
        width = min(max((stop - begin).total_seconds() / total * SPAN, 2.0),  # a visible tick
                    SPAN - x)
        wait = (s.kind in ("sleep", "wait", "update", "child", "parallel")
                or s.status is not StepStatus.DONE)
        jobs = [int(j) for j in (s.result or {}).get("jobs", [])
                if isinstance(j, int)] if isinstance(s.result, dict) else []
        shown = s.outcome or s.status.value
        label = (f"{s.name} ({s.kind}, {shown}): {format_time(begin)} → "
                 f"{'now' if still else format_time(stop)} UTC, "
                 f"{format_age((stop - begin).total_seconds())}"
                 + (f", {s.tries} failed tries" if s.tries else ""))
        bars.append(Bar(s, round(x, 1), round(width, 1), wait, still, label, jobs[:50]))
        previous = s.updated_at or begin
    return Timeline(start, end, bars)


@dataclass(frozen=True)
class LiveView:
    """The part of a workflow's page its live refresh redraws."""

    timeline: Timeline
    waiting: str


def live_view(w: WorkflowLive, now: datetime) -> LiveView:
    current = w.steps[-1] if w.steps else None
    line = timeline(w.steps, w.status, w.attempted_at or w.created_at, w.finished_at, now)
    if current is None:
        return LiveView(line, waiting_for(None, None, None, None, None, w.state, w.run_at))
    return LiveView(line, waiting_for(current.kind, current.name, current.status,
                                      current.wake_at, current.result, w.state, w.run_at))
