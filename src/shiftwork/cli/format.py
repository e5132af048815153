"""How the command line prints values: one formatter per kind of value, and its console.

Job data (names, arguments, error messages) is user data: it is printed on a plain console,
as text, never as Rich markup, with its control characters escaped (``safetext``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from enum import Enum
from typing import Any

import click
from rich.table import Table

from shiftwork.core.safetext import escape_controls, plain_console
from shiftwork.core.states import JobState
from shiftwork.observe.text import format_age, make_table  # shared with `top`, the web
from shiftwork.schedules.cron import CronSchedule
from shiftwork.schedules.definition import iso_z

console = plain_console()


def format_local(value: datetime | None, tz: str) -> str:
    """An instant on the wall clock of the IANA zone ``tz``: ``2025-03-08 13:00:00+0100``."""
    if value is None:
        return "-"
    return CronSchedule("* * * * *", tz).local(value).strftime("%Y-%m-%d %H:%M:%S%z")


def format_state(state: JobState) -> str:
    """A job's state as the command line and its JSON name it (``dead``, ``running``)."""
    return state.value


def format_attempts(job: Any) -> str:
    """``attempt 2/5``, and the runs when they are more: a workflow's sleeps and waits, a
    snooze or a hand-back at shutdown run the job again without spending an attempt, and
    the error history numbers runs (``run 4``)."""
    text = f"attempt {job.counted_attempt}/{job.max_attempts}"
    if job.attempt != job.counted_attempt:
        runs = f"{job.attempt} run" + ("s" if job.attempt != 1 else "")
        text += f" ({runs}, {job.attempt - job.counted_attempt} not counted)"
    return text


def queue_table(stats: list[Any], title: str = "queues") -> Table:
    """Per queue: its counts by state and the oldest waiting job's age (a held column
    only when some job is held: held jobs are not waiting)."""
    held = any(getattr(s, "held", 0) for s in stats)
    counts = ("waiting", "running", "scheduled", *(("held",) if held else ()), "succeeded",
              "dead", "oldest waiting")
    table = make_table(("queue", *counts), title=title, right=counts, whole=counts)
    for s in stats:
        name = f"{s.queue} (paused)" if getattr(s, "paused", False) else s.queue
        table.add_row(name, str(s.available), str(s.running), str(s.scheduled),
                      *((str(s.held),) if held else ()), str(s.succeeded), str(s.dead),
                      format_age(s.oldest_waiting_age))
    return table


def warn(text: str) -> None:
    """A warning on stderr: the command goes on (a refusal raises instead)."""
    click.echo(f"warning: {escape_controls(text)}", err=True)  # it may quote user input


def warn_unknown_queues(app: Any, queues: Iterable[str]) -> None:
    """Warn about each queue name nobody declared and the table has not seen (a typo?)."""
    for queue in queues:
        message = app.unknown_queue_warning(queue)
        if message:
            warn(message)


def job_dict(job: Any) -> dict[str, Any]:
    """A job as its JSON object: every field, the state by name."""
    d = dict(job.__dict__)
    d["state"] = format_state(job.state)
    return d


def json_value(value: Any) -> Any:
    """What JSON has no type for: an instant as ISO 8601 in UTC with ``T`` and ``Z``
    (``2025-03-08T12:00:00.250000Z``, as schedules print them), an enum by its value,
    anything else as its ``str()``."""
    if isinstance(value, datetime):
        return iso_z(value)
    if isinstance(value, Enum):
        return value.value
    return str(value)


def echo_json(data: Any, indent: int | None = 2) -> None:
    """Print ``data`` as JSON on stdout (plain ``click.echo``: no console styling); every
    command's JSON goes through here, so every instant reads the same."""
    click.echo(json.dumps(data, indent=indent, default=json_value))
