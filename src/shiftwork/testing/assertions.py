"""Assertions about what was enqueued, with messages that show what was."""

from __future__ import annotations

from typing import Any

from shiftwork.jobs.enqueue import Enqueuer
from shiftwork.jobs.task import Task
from shiftwork.model.records import Job
from shiftwork.testing.drain import enqueued


def assert_enqueued(task: Task[Any, Any], args: list[Any] | tuple[Any, ...] | None = None,
                    kwargs: dict[str, Any] | None = None, *, count: int | None = None,
                    queue: str | None = None) -> list[Job]:
    """Assert that ``task`` has waiting jobs (with these ``args`` / ``kwargs`` when given,
    compared after the JSON round trip; exactly ``count`` of them when given); returns them.

    >>> signup(user_id=7)
    >>> assert_enqueued(send_welcome, args=[7])
    """
    if not isinstance(task, Task) or not isinstance(task.host, Enqueuer):
        raise TypeError(f"{task!r} is not a task registered on a shiftwork App")
    waiting = enqueued(task.host.rt, task, queue=queue)
    matching = [j for j in waiting
                if (args is None or j.args == list(args))
                and (kwargs is None or j.kwargs == kwargs)]
    wanted = f"{task.name}(args={args!r}, kwargs={kwargs!r})"
    seen = [f"#{j.id} args={j.args!r} kwargs={j.kwargs!r}" for j in waiting] or ["none"]
    if count is None and not matching:
        raise AssertionError(f"no waiting job {wanted}; waiting jobs of the task: "
                             + "; ".join(seen))
    if count is not None and len(matching) != count:
        raise AssertionError(f"expected {count} waiting job(s) {wanted}, found "
                             f"{len(matching)}; waiting jobs of the task: " + "; ".join(seen))
    return matching
