"""``app.workflows.fork(id, from_step=...)``: a new run that keeps a workflow's recorded
results before a step and runs the rest on the current code (DBOS ``fork_workflow``,
Temporal's reset).

The fork is a new job of the same task, arguments and options (its meta names its source,
``forked_from``), inserted through the one insert pipeline; in the same transaction it is
given an instance row and copies of the source's records before the step's place (with the
sub-records of children and parallel calls among them) and of their stream values. Either
all of that commits or none of it: a crash leaves no half-made fork. The source is only
read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shiftwork.jobs.enqueue import insert_rows
from shiftwork.jobs.handle import JobHandle
from shiftwork.jobs.task import EnqueueOptions
from shiftwork.model.records import StepRecord
from shiftwork.workflow.children import PARENT_META
from shiftwork.workflow.errors import WorkflowError
from shiftwork.workflow.hooks import boundary
from shiftwork.workflow.replay import SEQUENCED

if TYPE_CHECKING:
    from shiftwork.runtime import Runtime

def body_steps(steps: dict[str, StepRecord]) -> list[StepRecord]:
    """The body's durable calls in order (not sub-records or compensations)."""
    return sorted((s for s in steps.values() if s.position is not None and s.kind in SEQUENCED),
                  key=lambda s: s.position or 0)

def resolve_step(workflow_id: int, steps: dict[str, StepRecord], from_step: str | int
                 ) -> int:
    """The position of the recorded body step named ``from_step``, or ``from_step`` itself
    if it is a recorded step's position (0 is the first) or the first without a record
    (where a step failed without recording: a fork from there runs it again)."""
    body = body_steps(steps)
    names = ", ".join(repr(s.name) for s in body[:20]) or "none recorded"
    if isinstance(from_step, bool) or not isinstance(from_step, (str, int)):
        raise WorkflowError(f"fork: from_step must be a step name or position, "
                            f"not {from_step!r}")
    frontier = (body[-1].position or 0) + 1 if body else 0
    if isinstance(from_step, int):
        if from_step == frontier:  # the first place with no record: the step that failed
            return frontier
        found = [s for s in body if s.position == from_step]
    else:
        found = [s for s in body if s.name == from_step]
    if not found:
        raise WorkflowError(f"fork: workflow {workflow_id} has no recorded step {from_step!r} "
                            f"(its steps: {names}; or position {frontier}, the first "
                            "without a record)")
    return found[0].position or 0

def fork(rt: Runtime, workflow_id: int, from_step: str | int) -> JobHandle[Any]:
    job = rt.store.jobs.get(workflow_id)  # JobNotFoundError names the id
    task = rt.registry.tasks.get(job.task)
    version = getattr(task, "workflow_version", None)
    if task is None or version is None:
        raise WorkflowError(f"fork: job {workflow_id} runs {job.task!r}, which this app does "
                            "not register as a workflow (a fork runs on the current code)")
    if rt.store.workflows.run_read(workflow_id) is None:
        raise WorkflowError(f"fork: workflow {workflow_id} has not begun a run; there is "
                            "nothing to fork (run it, or enqueue it again)")
    steps = rt.store.workflows.steps_get(workflow_id)
    position = resolve_step(workflow_id, steps, from_step)
    name = next((s.name for s in body_steps(steps) if s.position == position), None)
    # a fork is nobody's child: it must not report to the source's parent
    meta = {k: v for k, v in job.meta.items() if k != PARENT_META}
    meta = {**meta, "forked_from": {"id": workflow_id, "step": name,
                                        "position": position}}
    row = task.build(tuple(job.args), dict(job.kwargs), EnqueueOptions(
        queue=job.queue, priority=job.priority, max_attempts=job.max_attempts, meta=meta),
        None)
    with rt.store.transaction() as conn:
        new = insert_rows(rt, [row], conn=conn)[0]
        if not new.created:  # the task's unique key is held: never copy into that job
            raise WorkflowError(f"fork: job {new.id} holds the unique key of workflow "
                                f"{workflow_id}'s task {job.task!r}; a fork would be it")
        rt.store.reruns.fork_copy(workflow_id, new.id, position, version, conn)
        boundary(new.id, "before:fork:commit")
    rt.events.emit("workflow.forked", workflow_id=new.id, source=workflow_id, step=name,
                  position=position)
    return JobHandle(new.id, True, rt.results)
