"""The static types of ``@app.task(...)`` and ``@app.workflow(...)``: a decorator keeps
the function's signature, less the job context (or the Workflow) it receives first.

Type checkers only: at run time the App decides by the first parameter's name (``ctx``)
or annotation (``JobContext``). To a type checker a first parameter that is
``JobContext``, or not annotated at all, is the context.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar, overload

from shiftwork.jobs.batch_item import BatchItem
from shiftwork.jobs.context import JobContext
from shiftwork.jobs.task import Task
from shiftwork.workflow import Workflow

P = ParamSpec("P")
R = TypeVar("R")


class TaskDecorator(Protocol):
    """What ``app.task(queue=...)`` returns: turns a function into a :class:`Task`."""

    @overload
    def __call__(self, fn: Callable[Concatenate[JobContext, P], R], /) -> Task[P, R]: ...

    @overload
    def __call__(self, fn: Callable[P, R], /) -> Task[P, R]: ...


class WorkflowDecorator(Protocol):
    """What ``app.workflow(queue=...)`` returns: turns ``body(wf, ...)`` into a task."""

    def __call__(self, fn: Callable[Concatenate[Workflow, P], R], /) -> Task[P, R]: ...


class BatchTaskDecorator(Protocol):
    """What ``app.task(batch=Batch(...))`` returns: ``fn(items)`` becomes a task whose
    jobs take any JSON arguments (each item's ``args`` and ``kwargs``)."""

    def __call__(self, fn: Callable[[list[BatchItem]], object], /) -> Task[..., Any]: ...
