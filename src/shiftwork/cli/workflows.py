"""``shiftwork workflows``: list instances, show one's history, cancel one, send it events,
read its published state, send it updates, export histories and replay them against the
current code."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.text import Text

from shiftwork.cli.format import console, echo_json, format_attempts, format_state
from shiftwork.cli.options import open_app, target_options, workflow_id_argument
from shiftwork.core.errors import PayloadError
from shiftwork.core.safetext import escape_controls
from shiftwork.core.states import FINAL, WorkflowStatus
from shiftwork.observe.text import format_time, make_table
from shiftwork.workflow.histories import export, load, read_history, replay_all

STATUSES = tuple(s.value for s in WorkflowStatus if s is not WorkflowStatus.PENDING)
SUSPENDED = ("waiting", "sleeping")  # a step's status while the workflow waits on it


@click.group()
@target_options
def workflows() -> None:
    """Durable workflows: instances, history, cancel, events and forks."""


@workflows.command("list")
@click.option("--state", "status", default=None,
              help=f"Workflow status ({', '.join(STATUSES)}) or job state.")
@click.option("--name", "task", default=None, help="Only this workflow (its task name).")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 10_000))
@target_options
def workflows_list(status: str | None, task: str | None, limit: int) -> None:
    """Workflow instances that have started, newest first."""
    app = open_app()
    table = make_table(("id", "workflow", "status", "job state", "steps", "version",
                        "updated (UTC)"), right=("id", "steps"))
    for w in app.store.workflows.summaries(status=status, task=task, limit=limit):
        table.add_row(str(w.id), w.task, w.status, w.state, str(w.steps), w.version or "-",
                      format_time(w.updated_at))
    console.print(table)


@workflows.command("show")
@workflow_id_argument
@target_options
def workflows_show(workflow_id: int) -> None:
    """The workflow's status, version and every recorded step with its timings."""
    app = open_app()
    job = app.get_job(workflow_id)
    run = app.get_workflow(workflow_id)
    status = run.status if run else "pending (not started)"
    finished = job.state in FINAL
    console.print(Text.assemble((f"workflow {job.id}", "bold"), escape_controls(
        f"  {job.task}  status={status}  job={format_state(job.state)}  "
        f"{format_attempts(job)}  version={run.version if run else '-'}"
        # A finished workflow has no next run: its run_at is only its last one's.
        + ("" if finished else f"  next run {format_time(job.run_at)}"))))
    if run and run.cause:
        # A cause that is the cancel itself need not say it twice.
        cancelled = run.cancelled and "cancel" not in run.cause
        console.print(Text(escape_controls(f"cause: {run.cause}"
                                           + ("  (cancelled)" if cancelled else ""))))
    table = make_table(("#", "step", "kind", "status", "result", "started (UTC)",
                        "recorded (UTC)", "wake at (UTC)", "tries", "run"),
                       whole=("#", "status", "tries", "run"))
    for step in app.workflow_history(workflow_id):
        shown = step.outcome or step.status
        if finished and shown in SUSPENDED:
            shown = status  # the workflow ended (cancelled, failed) while it waited here
        table.add_row("-" if step.position is None else str(step.position), step.name,
                      step.kind, shown, json.dumps(step.result)[:60],
                      format_time(step.started_at), format_time(step.updated_at),
                      format_time(step.wake_at), str(step.tries), str(step.attempt))
    console.print(table)


@workflows.command("cancel")
@workflow_id_argument
@target_options
def workflows_cancel(workflow_id: int) -> None:
    """Cancel a workflow wherever it is: it compensates, then ends cancelled."""
    app = open_app()
    job = app.cancel_job(workflow_id)
    console.print(f"workflow {workflow_id}: cancel requested (job {format_state(job.state)}); "
                  "it stops at its next durable call and runs its compensations",
                  highlight=False)


@workflows.command("fork")
@workflow_id_argument
@click.option("--from-step", "from_step", required=True,
              help="The step to run again from: its name, or its position (0 is the first; "
                   "the first place without a record runs a failed step again).")
@target_options
def workflows_fork(workflow_id: int, from_step: str) -> None:
    """Start a new run that keeps the results recorded before a step and runs the rest on
    the current code; the original is left as it is."""
    app = open_app()
    names = {s.name for s in app.workflow_history(workflow_id)}
    where: str | int = int(from_step) if from_step.isdigit() and from_step not in names \
        else from_step
    handle = app.workflows.fork(workflow_id, from_step=where)
    console.print(f"workflow {workflow_id} forked from step {from_step!r}: new workflow "
                  f"{handle.id}", highlight=False)


@workflows.command("signal")
@workflow_id_argument
@click.argument("event")
@click.option("--payload", default="null", help="JSON payload of the event.")
@click.option("--key", default=None, help="Dedupe key: an event sent twice under one key "
                                          "is delivered once.")
@target_options
def workflows_signal(workflow_id: int, event: str, payload: str, key: str | None) -> None:
    """Send EVENT to a workflow waiting for it (kept if it is not waiting yet)."""
    app = open_app()
    value = _payload(payload)
    before = app.store.workflows.event_find(workflow_id, event, key) if key else None
    event_id = app.send_event(workflow_id, event, value, key=key)
    if before is not None and before == event_id:
        console.print(f"event {event_id} was already sent to workflow {workflow_id} under "
                      f"key {key!r}: deduplicated, not delivered again", highlight=False)
        return
    console.print(f"event {event_id} sent to workflow {workflow_id}")


def _payload(text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise PayloadError(f"--payload must be JSON: {exc}") from None


@workflows.command("state")
@workflow_id_argument
@target_options
def workflows_state(workflow_id: int) -> None:
    """Print what a workflow published (wf.set_state), as JSON: key -> value."""
    echo_json(open_app().workflows.state(workflow_id))


@workflows.command("update")
@workflow_id_argument
@click.argument("name")
@click.option("--payload", default="null", help="JSON payload of the update.")
@click.option("--timeout", default=30.0, show_default=True, type=click.FloatRange(min=0),
              help="Seconds to wait for the workflow's result.")
@target_options
def workflows_update(workflow_id: int, name: str, payload: str, timeout: float) -> None:
    """Send update NAME to a workflow and print its result as JSON, once the workflow
    handled it (wf.wait_for_update). A rejection or a timeout exits 2."""
    echo_json(open_app().workflows.update(workflow_id, name, _payload(payload),
                                          timeout=timeout))


@workflows.command("export")
@click.argument("workflow_ids", nargs=-1, type=int)
@click.option("--state", "status", default=None,
              help="With no ids: instances of this status (or job state).")
@click.option("--name", "task", default=None, help="With no ids: only this workflow.")
@click.option("--limit", default=100, show_default=True, type=click.IntRange(1, 10_000),
              help="With no ids: at most this many, newest first.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the JSON to this file (default: standard output).")
@target_options
def workflows_export(workflow_ids: tuple[int, ...], status: str | None, task: str | None,
                     limit: int, output: Path | None) -> None:
    """Print recorded histories as JSON, for `workflows replay` and
    shiftwork.testing.assert_replays (keep a few in your repository: CI replays them
    against each change of the workflow code)."""
    app = open_app()
    ids = list(workflow_ids) or [w.id for w in app.store.workflows.summaries(
        status=status, task=task, limit=limit)]
    histories = [read_history(app.runtime, i) for i in ids]
    text = json.dumps(export(histories), indent=1)
    if output is None:
        click.echo(text)
        return
    output.write_text(text + "\n")
    click.echo(f"{len(histories)} workflow histories written to {output}", err=True)


@workflows.command("replay")
@click.argument("histories", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@target_options
def workflows_replay(histories: Path) -> None:
    """Replay exported HISTORIES against the current code, without the database and
    without running a step; exit status 1 if any diverged (what, and where)."""
    app = open_app(need_app="replaying runs the workflows' code")
    report = replay_all(app.runtime, load(histories.read_text()))
    for result in report.results:
        console.print(Text(escape_controls(str(result)),
                           style="" if result.ok else "bold red"))
    console.print(Text(escape_controls(str(report).splitlines()[0])))
    if not report.ok:
        raise SystemExit(1)
