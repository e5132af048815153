"""``shiftwork enqueue``: enqueue one job of a task with JSON arguments."""

from __future__ import annotations

import click

from shiftwork.cli.format import console, warn_unknown_queues
from shiftwork.cli.options import code_target_options, open_app, queue_option
from shiftwork.core.errors import PayloadError
from shiftwork.core.payload import parse_json


@click.command()
@click.argument("task_name")
@code_target_options
@click.option("--args", "args_json", default="[]", help="JSON list of positional arguments.")
@click.option("--kwargs", "kwargs_json", default="{}", help="JSON object of keyword arguments.")
@click.option("--delay", type=float, help="Seconds from now.")
@click.option("--priority", type=int,
              help="Higher runs first among the due jobs of its queue (default: the "
                   "task's priority, 0 unless it declares one).")
@queue_option
@click.option("--key", help="Unique key: at most one active job per key.")
def enqueue(task_name: str, args_json: str, kwargs_json: str,
            delay: float | None, priority: int | None, queue: str | None,
            key: str | None) -> None:
    """Enqueue TASK_NAME with JSON arguments."""
    app = open_app(need_app="enqueue checks the arguments against your task's code")
    depth = app.settings.max_json_depth
    args = parse_json(args_json, "--args", depth)
    kwargs = parse_json(kwargs_json, "--kwargs", depth)
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        raise PayloadError("--args must be a JSON list and --kwargs a JSON object")
    task = app.get_task(task_name)
    if queue is not None:
        warn_unknown_queues(app, [queue])
    result = task.using(delay=delay, priority=priority, queue=queue, key=key) \
        .enqueue(*args, **kwargs)
    console.print(f"job {result.id} {'enqueued' if result.created else 'already active (key)'}")
