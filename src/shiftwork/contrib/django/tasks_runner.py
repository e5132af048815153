"""The shiftwork task that runs a Django ``@task`` function in a worker.

Each Django task is registered on the project's App under its module path
(``shop.tasks.send_receipt``) when its module is imported: in a worker that is at
start-up, when shiftwork's Django app imports every installed app's ``tasks`` module. The
job runs the module-level Task found by that path, so a reloaded module runs its new code.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from shiftwork.contrib.django import tasks_api as api
from shiftwork.contrib.django.tasks_results import META_KEY, result_of, status_of
from shiftwork.core.control import Snooze
from shiftwork.core.errors import JobPaused, LeaseLost
from shiftwork.core.states import JobState
from shiftwork.jobs.context import JobContext

if TYPE_CHECKING:
    from shiftwork.app import App
    from shiftwork.jobs.task import Task as ShiftworkTask

#: set on the function registered for a Django task: the task's module path
RUNS = "__shiftwork_django_task__"
_registering = threading.Lock()  # two threads validating one new task register it once
#: how an attempt stops without the job ending: a snooze, a pause, a lease lost
_NOT_AN_END = (Snooze, JobPaused, LeaseLost)


def registered(app: App, task: Any, timeout: float | None) -> ShiftworkTask[Any, Any]:
    """The shiftwork task that runs ``task`` (a Django Task), registered on first use."""
    path = task.module_path
    with _registering:
        existing = app.tasks.get(path)
        if existing is None:
            return app.task(name=path, queue=task.queue_name, timeout=timeout)(_runner(task))
    if getattr(existing.fn, RUNS, None) != path:
        raise api.refuse(f"{path}: a shiftwork task of that name is already registered "
                         "(@app.task): a Django task needs the name to itself")
    if existing.options.timeout != timeout:
        raise api.refuse(f"{path}: two Django task backends give it different TIMEOUT "
                         f"options ({existing.options.timeout} and {timeout})")
    return existing


def _runner(task: Any) -> Callable[..., Any]:
    path = task.module_path
    if inspect.iscoroutinefunction(task.func):
        async def run_async(ctx: JobContext, *args: Any, **kwargs: Any) -> Any:
            current, result, backend = await asyncio.to_thread(_begin, ctx, path)
            try:
                value = await current.func(*_context(current, result), *args, **kwargs)
                value = api.normalize_json(value)
            except KeyboardInterrupt:
                raise
            except BaseException as exc:
                _failed(ctx, backend, result, exc)  # (no I/O: the receivers log)
                raise
            _succeeded(backend, result, value)
            return value

        fn: Callable[..., Any] = run_async
    else:
        def run_sync(ctx: JobContext, *args: Any, **kwargs: Any) -> Any:
            from django.db import close_old_connections

            # As Django does around a request: a worker thread's connection is otherwise
            # never closed (CONN_MAX_AGE) nor checked after an error.
            close_old_connections()
            try:
                current, result, backend = _begin(ctx, path)
                try:
                    value = api.normalize_json(
                        current.func(*_context(current, result), *args, **kwargs))
                except KeyboardInterrupt:
                    raise
                except BaseException as exc:
                    _failed(ctx, backend, result, exc)
                    raise
                _succeeded(backend, result, value)
                return value
            finally:
                close_old_connections()

        fn = run_sync
    setattr(fn, RUNS, path)
    fn.__name__ = fn.__qualname__ = task.func.__name__
    fn.__module__ = task.func.__module__
    fn.__doc__ = task.func.__doc__
    # The Django function's own parameters (less its context), so shiftwork refuses a
    # call that does not fit at enqueue; the job's context comes first, positional-only,
    # so no parameter name of the function can clash with it.
    params = list(inspect.signature(task.func).parameters.values())
    if task.takes_context:
        params = params[1:]
    job = inspect.Parameter("job", inspect.Parameter.POSITIONAL_ONLY, annotation=JobContext)
    fn.__signature__ = inspect.Signature([job, *params])  # type: ignore[attr-defined]
    return fn


def _begin(ctx: JobContext, path: str) -> tuple[Any, Any, Any]:
    """The module-level Django Task now, the job's TaskResult (RUNNING) and its backend;
    ``task_started`` sent."""
    from django.utils.module_loading import import_string

    from shiftwork.contrib.django import get_app

    current = import_string(path)
    backend = api.task_backends[ctx.meta.get(META_KEY, {}).get("backend", current.backend)]
    result = result_of(get_app().get_job(ctx.job_id))
    api.task_started.send(sender=type(backend), task_result=result)
    return current, result, backend


def _context(task: Any, result: Any) -> tuple[Any, ...]:
    return (api.TaskContext(task_result=result),) if task.takes_context else ()


def _finished(result: Any, state: JobState) -> Any:
    from django.utils import timezone

    return dataclasses.replace(result, status=status_of(state), finished_at=timezone.now())



def _succeeded(backend: Any, result: Any, value: Any) -> None:
    done = _finished(result, JobState.SUCCEEDED)
    object.__setattr__(done, "_return_value", value)
    api.task_finished.send(sender=type(backend), task_result=done)


def _failed(ctx: JobContext, backend: Any, result: Any, exc: BaseException) -> None:
    """``task_finished`` (FAILED) when this was the last attempt; a job to be retried has
    not finished. Sent inside the except block, where Django's log handler finds the
    exception."""
    if ctx.counted_attempt < ctx.max_attempts or isinstance(exc, _NOT_AN_END):
        return
    import traceback

    error = api.TaskError(exception_class_path=f"{type(exc).__module__}.{type(exc).__qualname__}",
                          traceback="".join(traceback.format_exception(exc)))
    done = dataclasses.replace(_finished(result, JobState.DEAD),
                               errors=[*result.errors, error])
    api.task_finished.send(sender=type(backend), task_result=done)
