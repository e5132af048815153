"""``shiftwork jobs``: list, show, follow, retry and cancel jobs."""

from __future__ import annotations

import json
import time

import click
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from ..checkpoint import Progress as JobProgress
from ..checkpoint import describe_progress
from ..observe.text import format_time, make_table
from ..records import DepLink
from ..safetext import escape_controls
from ..states import FINAL, JobState
from .format import console, echo_json, format_state, job_dict
from .options import (
    interval_option,
    job_id_argument,
    job_ids_argument,
    json_flag,
    limit_option,
    open_app,
    queue_option,
    target_options,
)


@click.group()
@target_options
def jobs() -> None:
    """Inspect and act on jobs."""


@jobs.command("list")
@target_options
@click.option("--state", type=click.Choice([s.value for s in JobState]))
@queue_option
@click.option("--task")
@limit_option(50)
@json_flag()
def jobs_list(state: str | None,
              queue: str | None, task: str | None, limit: int, as_json: bool) -> None:
    """List jobs, newest first."""
    app = open_app()
    found = app.list_jobs(state=state, queue=queue, task=task, limit=limit)
    if as_json:
        echo_json([job_dict(j) for j in found])
        return
    # The progress column only when a job has progress: 80 columns are few.
    with_progress = any(j.progress is not None for j in found)
    table = make_table(("id", "task", "queue", "state", "attempt")
                       + (("progress",) if with_progress else ()) + ("run at (UTC)", "last error"),
                       right=("id", "attempt"), whole=("id", "state", "attempt", "run at (UTC)"))
    for j in found:
        last = j.errors[-1] if j.errors else None
        table.add_row(str(j.id), j.task, j.queue, format_state(j.state),
                      f"{j.counted_attempt}/{j.max_attempts}",
                      *((describe_progress(j.progress)[:40],) if with_progress else ()),
                      format_time(j.run_at),
                      f"{last['type']}: {last['message']}"[:60] if last else "")
    console.print(table)


@jobs.command("show")
@job_id_argument
@target_options
@json_flag()
def jobs_show(job_id: int, as_json: bool) -> None:
    """Everything about one job, with its error history."""
    app = open_app()
    job = app.get_job(job_id)
    parents, children = app.store.jobs_dependencies(job_id)
    member_of, callback_of = app.store.groups_of_job(job_id)
    if as_json:
        echo_json({**job_dict(job), "dependencies": [link_dict(p) for p in parents],
                   "dependents": [link_dict(c) for c in children],
                   "groups": member_of, "callback_of_group": callback_of})
        return
    console.print(Text.assemble((f"job {job.id}", "bold"), escape_controls(
        f"  {job.task}  queue={job.queue}  state={format_state(job.state)}  "
        f"attempt {job.counted_attempt}/{job.max_attempts}")))
    console.print(f"args={json.dumps(job.args)} kwargs={json.dumps(job.kwargs)}",
                  markup=False, highlight=False)
    console.print(f"created {format_time(job.created_at)}  run at {format_time(job.run_at)}  "
                  f"attempted {format_time(job.attempted_at)}  "
                  f"finished {format_time(job.finished_at)}")
    if job.unique_key:
        console.print(f"unique key: {job.unique_key}", markup=False)
    if job.items is not None:
        console.print(f"items processed: {job.items}", markup=False)
    if job.progress is not None:
        console.print(f"progress: {describe_progress(job.progress) or json.dumps(job.progress)}",
                      markup=False)
    if job.checkpoint is not None:
        console.print(f"checkpoint: {json.dumps(job.checkpoint)}", markup=False)
    if job.result is not None:
        console.print(f"result: {json.dumps(job.result)}", markup=False)
    for title, links in (("runs after", parents), ("run after it", children)):
        if links:
            console.print(f"{title}: " + ", ".join(describe_link(x) for x in links),
                          markup=False)
    if member_of:
        console.print("member of group " + ", ".join(map(str, member_of)), markup=False)
    if callback_of is not None:
        console.print(f"callback of group {callback_of}: runs after all its members "
                      f"(shiftwork groups show {callback_of})", markup=False)
    for err in job.errors:
        console.print(Text.assemble(("\nattempt " + escape_controls(str(err.get("attempt"))),
                                     "red"), escape_controls(
            f" {err.get('kind')}: {err.get('type')}: {err.get('message')}")))
        if err.get("traceback"):
            console.print(err["traceback"], markup=False, highlight=False)


def describe_link(link: DepLink) -> str:
    """``12 fetch succeeded`` (with ``run anyway`` / ``waiting`` when it says more)."""
    state = link.state.value if link.state else "pruned"
    notes = ([] if link.on_failure == "cancel" else ["run anyway"]) + (
        [] if link.resolved else ["open"])
    return f"{link.job_id} {link.task or '?'} {state}" + (
        f" ({', '.join(notes)})" if notes else "")


def link_dict(link: DepLink) -> dict[str, object]:
    return {"job_id": link.job_id, "task": link.task,
            "state": link.state.value if link.state else None,
            "on_failure": link.on_failure, "resolved": link.resolved}


@jobs.command("retry")
@job_ids_argument
@target_options
def jobs_retry(job_ids: tuple[int, ...]) -> None:
    """Make dead, cancelled or waiting jobs run again now."""
    app = open_app()
    for job_id in job_ids:
        job = app.retry_job(job_id)
        console.print(f"job {job.id}: {format_state(job.state)}")


@jobs.command("cancel")
@job_ids_argument
@target_options
def jobs_cancel(job_ids: tuple[int, ...]) -> None:
    """Cancel waiting jobs; ask the worker running a running job to stop it.

    A job that has already finished cannot be cancelled: it is named, the others are
    cancelled, and the command exits 1 (a refused action)."""
    app = open_app()
    refused = 0
    for job_id in job_ids:
        before = app.get_job(job_id)
        if before.state in FINAL:
            click.echo(f"job {job_id}: already {format_state(before.state)}, nothing to "
                       "cancel", err=True)
            refused += 1
            continue
        job = app.cancel_job(job_id)
        note = " (cancel requested; the worker stops it)" if job.state is JobState.RUNNING else ""
        console.print(f"job {job.id}: {format_state(job.state)}{note}")
    if refused:
        raise SystemExit(1)


@jobs.command("follow")
@job_id_argument
@target_options
@interval_option(0.5, "Seconds between reads.")
def jobs_follow(job_id: int, interval: float) -> None:
    """Show JOB_ID's progress live until it finishes; exit 0 if it succeeded, else 1."""
    app = open_app()
    job = app.get_job(job_id)
    columns = [TextColumn("[bold]job {task.fields[job_id]}[/bold] {task.fields[state]}"),
               BarColumn(), TaskProgressColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TimeRemainingColumn(), TextColumn("{task.description}")]
    with Progress(*columns, console=console, transient=False) as bar:
        task = bar.add_task("", total=None, job_id=job_id, state=format_state(job.state))
        while True:
            progress = JobProgress.from_json(job.progress)
            fields: dict[str, object] = {"state": format_state(job.state)}
            if progress is not None:
                fields.update(completed=progress.done, total=progress.total,
                              description=progress.message or "")
            bar.update(task, **fields)  # type: ignore[arg-type]
            if job.state in FINAL:
                break
            time.sleep(interval)
            job = app.get_job(job_id)
    last = job.errors[-1] if job.errors else None
    note = f"  last error: {last.get('type')}: {last.get('message')}" \
        if last and job.state is not JobState.SUCCEEDED else ""
    console.print(f"job {job_id}: {format_state(job.state)}{note}", markup=False,
                  highlight=False)
    if job.state is not JobState.SUCCEEDED:
        raise SystemExit(1)
