"""``shiftwork workflows``: a workflow's recorded steps, and sending it events."""

from __future__ import annotations

import json

import click
from rich.text import Text

from ..errors import PayloadError
from ..safetext import escape_controls
from .format import console, format_state, format_time, make_table
from .options import open_app, target_options, workflow_id_argument


@click.group()
@target_options
def workflows() -> None:
    """Durable workflows: history and events."""


@workflows.command("show")
@workflow_id_argument
@target_options
def workflows_show(workflow_id: int) -> None:
    """The workflow's job state and every recorded step."""
    app = open_app()
    job = app.get_job(workflow_id)
    console.print(Text.assemble((f"workflow {job.id}", "bold"), escape_controls(
        f"  {job.task}  state={format_state(job.state)}  next run {format_time(job.run_at)}")))
    table = make_table(("step", "status", "result", "wake at (UTC)", "attempt",
                        "recorded (UTC)"))
    for step in app.workflow_history(workflow_id):
        table.add_row(step.name, step.status, json.dumps(step.result)[:60],
                      format_time(step.wake_at), str(step.attempt), format_time(step.updated_at))
    console.print(table)


@workflows.command("signal")
@workflow_id_argument
@click.argument("event")
@click.option("--payload", default="null", help="JSON payload of the event.")
@target_options
def workflows_signal(workflow_id: int, event: str, payload: str) -> None:
    """Send EVENT to a workflow waiting for it (kept if it is not waiting yet)."""
    app = open_app()
    try:
        value = json.loads(payload)
    except json.JSONDecodeError as exc:
        raise PayloadError(f"--payload must be JSON: {exc}") from None
    event_id = app.send_event(workflow_id, event, value)
    console.print(f"event {event_id} sent to workflow {workflow_id}")
