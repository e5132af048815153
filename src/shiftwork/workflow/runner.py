"""Turn a workflow function into a task: replay, suspension, compensation."""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from typing import Any

from ..context import JobContext
from ..errors import JobCancelled, Snooze
from ..payload import encode_json
from ..task import Task
from .context import Workflow
from .errors import CompensationFailed, LeaseLost, WorkflowError

log = logging.getLogger("shiftwork.workflow")


def workflow_task(register: Callable[[Callable[..., Any]], Task[Any, Any]],
                  fn: Callable[..., Any]) -> Task[Any, Any]:
    """Register ``fn(wf, ...)`` as a task whose first argument is a :class:`Workflow`;
    ``register`` registers the job-side function on the App with the workflow's options."""
    if inspect.iscoroutinefunction(fn):
        raise WorkflowError(f"workflow {fn.__qualname__}: the body must be a plain function "
                            "(its steps may call anything)")
    params = list(inspect.signature(fn).parameters.values())
    if not params:
        raise WorkflowError(f"workflow {fn.__qualname__}: the first parameter receives the "
                            "Workflow, e.g. def place_order(wf, order_id)")
    holder: dict[str, Any] = {}

    @functools.wraps(fn)
    def run(ctx: JobContext, *args: Any, **kwargs: Any) -> Any:
        wf = Workflow(ctx)
        try:
            return fn(wf, *args, **kwargs)
        except (Snooze, LeaseLost):
            raise
        except BaseException as exc:
            task = holder["task"]
            final = (isinstance(exc, JobCancelled) or ctx.attempt >= ctx.max_attempts
                     or not task.options.retry.retryable(exc))
            if final and wf.compensations:
                _compensate(wf, exc)
            raise

    # The task's signature is the body's, with the Workflow slot taken by the job context.
    ctx_param = inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    run.__signature__ = inspect.signature(fn).replace(  # type: ignore[attr-defined]
        parameters=[ctx_param, *params[1:]])
    task = register(run)
    holder["task"] = task
    return task


def _compensate(wf: Workflow, cause: BaseException) -> None:
    """Undo completed steps in reverse order; each compensation is itself a recorded step."""
    failures: list[str] = []
    for name, undo, result in reversed(wf.compensations):
        step_name = f"compensate:{name}"
        if step_name in wf.history and wf.history[step_name].status == "done":
            continue
        try:
            outcome = undo(result)
            wf._record(step_name, "done", encode_json(outcome, step_name, wf._step_limit()))
        except LeaseLost:
            raise
        except Exception as exc:
            log.error("workflow %s: compensation %s failed: %s", wf.id, step_name, exc)
            failures.append(f"{step_name}: {type(exc).__name__}: {exc}")
    wf.app.events.emit("workflow.compensated", workflow_id=wf.id, cause=repr(cause),
                       failed=len(failures))
    if failures:
        raise CompensationFailed(f"workflow {wf.id} failed ({cause!r}) and "
                                 f"{len(failures)} compensation(s) failed: "
                                 + "; ".join(failures)) from cause
