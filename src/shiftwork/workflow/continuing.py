"""``wf.continue_as_new(*args, **kwargs)``: end this run, start the next with a fresh history.

A long-lived or looping workflow would otherwise replay an ever longer history. The next
run keeps the workflow's id (its job: events, ``result()``, streams and links all still
name it); one transaction, fenced by attempt, deletes the run's steps, the events it took,
its joins and its children's enqueue-once keys, counts the instance's generation and
stores the new arguments on the job. That commit is the hand-over: the run then snoozes
(due at once), and a run lost after the commit is rescued into the next one all the same.
Events not yet taken and stream values are kept.
"""

from __future__ import annotations

from typing import Any, NoReturn

from shiftwork.core.backoff import repeat_on_storage_error
from shiftwork.core.errors import JobCancelled, LeaseLost
from shiftwork.jobs.task import EnqueueOptions
from shiftwork.workflow.errors import StopReplay, WorkflowError
from shiftwork.workflow.hooks import boundary
from shiftwork.workflow.streams import Workflow  # what it needs of one (no import back)


class ContinuedAsNew(BaseException):
    """Raised by ``continue_as_new`` once the reset committed; the runner snoozes the job."""


def continue_as_new(wf: Workflow, args: tuple[Any, ...], kwargs: dict[str, Any]) -> NoReturn:
    if wf.compensating or wf.verify_only:
        raise StopReplay("continue_as_new")
    if wf.cancel_requested:
        raise JobCancelled(f"workflow {wf.id} was cancelled; it does not continue as new")
    task = wf.runtime.registry.tasks.get(wf.ctx.task)
    version = getattr(task, "workflow_version", None)
    if task is None or version is None:
        raise WorkflowError(f"workflow {wf.id}: its task {wf.ctx.task!r} is not registered "
                            "here as a workflow; it cannot continue as new")
    # the arguments are checked as an enqueue checks them (signature, JSON, size)
    row = task.build(tuple(args), dict(kwargs), EnqueueOptions(), None)
    # read before the reset and set after it: repeating the reset sets the same number
    generation = (wf._store.reruns.generation(wf.id) or 0) + 1
    boundary(wf.id, "before:continue:done")
    flag = repeat_on_storage_error(lambda: wf._store.reruns.continue_as_new(
        wf.id, wf.ctx.attempt, row.args_json, version, f"wf:{wf.id}:", generation))
    if flag is None:
        raise LeaseLost(f"workflow {wf.id} attempt {wf.ctx.attempt} lost its lease before "
                        "continuing as new")
    boundary(wf.id, "after:continue:done")
    wf.runtime.events.emit("workflow.continued", workflow_id=wf.id)
    raise ContinuedAsNew()
