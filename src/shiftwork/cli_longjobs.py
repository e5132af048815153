"""Commands for long jobs: pause and resume a queue, follow a job's progress live."""

from __future__ import annotations

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

from .checkpoint import Progress as JobProgress
from .cli import console, jobs, queues
from .cli_target import open_app, target_options
from .states import FINAL, JobState


@queues.command("pause")
@click.argument("name")
@target_options
def queues_pause(name: str) -> None:
    """Stop claims on queue NAME; its running jobs stop at their next checkpoint."""
    app = open_app()
    app.pause_queue(name)
    console.print(f"queue {name}: paused (running jobs go back to waiting at their next "
                  "checkpoint; jobs that never checkpoint run to the end)", highlight=False)


@queues.command("resume")
@click.argument("name")
@target_options
def queues_resume(name: str) -> None:
    """Claim from queue NAME again; paused jobs continue from their checkpoints."""
    app = open_app()
    app.resume_queue(name)
    console.print(f"queue {name}: resumed", highlight=False)


@jobs.command("follow")
@click.argument("job_id", type=int)
@target_options
@click.option("--interval", default=0.5, show_default=True, help="Seconds between reads.")
def jobs_follow(job_id: int, interval: float) -> None:
    """Show JOB_ID's progress live until it finishes; exit 0 if it succeeded, else 1."""
    app = open_app()
    job = app.get_job(job_id)
    columns = [TextColumn("[bold]job {task.fields[job_id]}[/bold] {task.fields[state]}"),
               BarColumn(), TaskProgressColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TimeRemainingColumn(), TextColumn("{task.description}")]
    with Progress(*columns, console=console, transient=False) as bar:
        task = bar.add_task("", total=None, job_id=job_id, state=job.state.value)
        while True:
            progress = JobProgress.from_json(job.progress)
            fields: dict[str, object] = {"state": job.state.value}
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
    console.print(f"job {job_id}: {job.state.value}{note}", markup=False, highlight=False)
    if job.state is not JobState.SUCCEEDED:
        raise SystemExit(1)
