"""The ``shiftwork`` command."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from .checkpoint import describe_progress
from .cli_target import app_argument, open_app, target_options
from .errors import ShiftworkError
from .redact import redact
from .safetext import escape_controls, plain_console
from .states import JobState

# Job data is printed as plain text: no Rich markup from it, its control characters escaped.
console = plain_console()
err_console = plain_console(stderr=True)


def _setup_logging(level: str) -> None:
    logging.basicConfig(level=getattr(logging, level.upper(), logging.INFO),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def format_age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = max(seconds, 0.0)
    if seconds < 60:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        return f"{seconds / 60:.1f}m"
    if seconds < 86400:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"


def _when(value: datetime | None) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S") if value else "-"


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ShiftworkError as exc:
            click.echo(f"error: {escape_controls(redact(str(exc)), keep=chr(10))}", err=True)
            sys.exit(2)


@click.group(cls=_Group)
@click.version_option(package_name="shiftwork")
@target_options
def main() -> None:
    """shiftwork: background jobs and schedules on SQLite or PostgreSQL."""


@main.command()
@app_argument
@target_options
@click.option("--queue", "-q", "queues", multiple=True, metavar="NAME=CONCURRENCY[:process]",
              help="A queue and its pool size; repeat for more. Default: every task's queue=10. "
                   "':process' runs each of its jobs in a child process that a timeout or a "
                   "cancel can kill.")
@click.option("--grace", default=30.0, show_default=True,
              help="Seconds running jobs get to finish on SIGTERM before they are handed back.")
@click.option("--connect-timeout", default=60.0, show_default=True,
              help="Seconds to keep retrying an unreachable database at start.")
@click.option("--log-level", default="INFO", show_default=True)
@click.option("--log-format", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="json: one object per line with the job event's fields.")
@click.option("--metrics-port", type=int, help="Serve Prometheus /metrics on this port.")
@click.option("--metrics-host", default="127.0.0.1", show_default=True,
              help="Address for --metrics-port (0.0.0.0 to let Prometheus reach it).")
def worker(queues: tuple[str, ...], grace: float, connect_timeout: float,
           log_level: str, log_format: str, metrics_port: int | None,
           metrics_host: str) -> None:
    """Run a worker process for APP's tasks."""
    from .observe.logging import configure_logging
    from .worker import Worker

    configure_logging(log_level, log_format)
    app = open_app(need_app="a worker runs your tasks, so it needs your code")
    pools: dict[str, int] = {}
    in_process: set[str] = set()
    for item in queues:
        name, _, size = item.partition("=")
        size, _, mode = size.partition(":")
        if mode not in ("", "thread", "process"):
            raise click.BadParameter(f"{item!r}: executor must be 'thread' or 'process'",
                                     param_hint="--queue")
        try:
            pools[name] = int(size) if size else 10
        except ValueError:
            raise click.BadParameter(f"{item!r}: expected NAME=CONCURRENCY, e.g. emails=20",
                                     param_hint="--queue") from None
        if mode == "process":
            in_process.add(name)
    if not pools:
        pools = {t.options.queue: 10 for t in app.tasks.values()} or {"default": 10}
    Worker(app, pools, grace=grace, connect_timeout=connect_timeout,
           process_queues=in_process, metrics_port=metrics_port,
           metrics_host=metrics_host).run()


@main.command()
@target_options
def migrate() -> None:
    """Create or upgrade the database schema."""
    app = open_app()
    applied = app.migrate()
    console.print(f"applied migrations: {applied}" if applied else "schema is up to date")


@main.group(invoke_without_command=True)
@target_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def queues(ctx: click.Context, as_json: bool) -> None:
    """Per queue: waiting, running, scheduled, dead, and the oldest waiting job's age."""
    if ctx.invoked_subcommand is not None:
        return
    app = open_app()
    stats = app.queue_stats()
    if as_json:
        click.echo(json.dumps([s.__dict__ for s in stats], indent=2))
        return
    console.print(queue_table(stats))


def queue_table(stats: list[Any], title: str = "queues") -> Table:
    table = Table(title=title)
    for col in ("queue", "waiting", "running", "scheduled", "succeeded", "dead", "oldest waiting"):
        table.add_column(col, justify="left" if col == "queue" else "right")
    for s in stats:
        name = f"{s.queue} (paused)" if getattr(s, "paused", False) else s.queue
        table.add_row(name, str(s.available), str(s.running), str(s.scheduled),
                      str(s.succeeded), str(s.dead), format_age(s.oldest_waiting_age))
    return table


@main.group()
@target_options
def jobs() -> None:
    """Inspect and act on jobs."""


@jobs.command("list")
@target_options
@click.option("--state", type=click.Choice([s.value for s in JobState]))
@click.option("--queue")
@click.option("--task")
@click.option("--limit", default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True)
def jobs_list(state: str | None,
              queue: str | None, task: str | None, limit: int, as_json: bool) -> None:
    """List jobs, newest first."""
    app = open_app()
    found = app.list_jobs(state=state, queue=queue, task=task, limit=limit)
    if as_json:
        click.echo(json.dumps([_job_dict(j) for j in found], indent=2, default=str))
        return
    table = Table()
    for col in ("id", "task", "queue", "state", "attempt", "progress", "run at (UTC)",
                "last error"):
        table.add_column(col)
    for j in found:
        last = j.errors[-1] if j.errors else None
        table.add_row(str(j.id), j.task, j.queue, j.state.value, f"{j.attempt}/{j.max_attempts}",
                      describe_progress(j.progress)[:40], _when(j.run_at),
                      f"{last['type']}: {last['message']}"[:60] if last else "")
    console.print(table)


def _job_dict(job: Any) -> dict[str, Any]:
    d = dict(job.__dict__)
    d["state"] = job.state.value
    return d


@jobs.command("show")
@click.argument("job_id", type=int)
@target_options
@click.option("--json", "as_json", is_flag=True)
def jobs_show(job_id: int, as_json: bool) -> None:
    """Everything about one job, with its error history."""
    app = open_app()
    job = app.get_job(job_id)
    if as_json:
        click.echo(json.dumps(_job_dict(job), indent=2, default=str))
        return
    console.print(Text.assemble((f"job {job.id}", "bold"), escape_controls(
        f"  {job.task}  queue={job.queue}  state={job.state.value}  "
        f"attempt {job.attempt}/{job.max_attempts}")))
    console.print(f"args={json.dumps(job.args)} kwargs={json.dumps(job.kwargs)}",
                  markup=False, highlight=False)
    console.print(f"created {_when(job.created_at)}  run at {_when(job.run_at)}  "
                  f"attempted {_when(job.attempted_at)}  finished {_when(job.finished_at)}")
    if job.unique_key:
        console.print(f"unique key: {job.unique_key}", markup=False)
    if job.progress is not None:
        console.print(f"progress: {describe_progress(job.progress) or json.dumps(job.progress)}",
                      markup=False)
    if job.checkpoint is not None:
        console.print(f"checkpoint: {json.dumps(job.checkpoint)}", markup=False)
    if job.result is not None:
        console.print(f"result: {json.dumps(job.result)}", markup=False)
    for err in job.errors:
        console.print(Text.assemble(("\nattempt " + escape_controls(str(err.get("attempt"))),
                                     "red"), escape_controls(
            f" {err.get('kind')}: {err.get('type')}: {err.get('message')}")))
        if err.get("traceback"):
            console.print(err["traceback"], markup=False, highlight=False)


@jobs.command("retry")
@click.argument("job_ids", type=int, nargs=-1, required=True)
@target_options
def jobs_retry(job_ids: tuple[int, ...]) -> None:
    """Make dead, cancelled or waiting jobs run again now."""
    app = open_app()
    for job_id in job_ids:
        job = app.retry_job(job_id)
        console.print(f"job {job.id}: {job.state.value}")


@jobs.command("cancel")
@click.argument("job_ids", type=int, nargs=-1, required=True)
@target_options
def jobs_cancel(job_ids: tuple[int, ...]) -> None:
    """Cancel waiting jobs; ask the worker running a running job to stop it."""
    app = open_app()
    for job_id in job_ids:
        job = app.cancel_job(job_id)
        note = " (cancel requested; the worker stops it)" if job.state is JobState.RUNNING else ""
        console.print(f"job {job.id}: {job.state.value}{note}")


@main.command()
@click.argument("task_name")
@target_options
@click.option("--args", "args_json", default="[]", help="JSON list of positional arguments.")
@click.option("--kwargs", "kwargs_json", default="{}", help="JSON object of keyword arguments.")
@click.option("--delay", type=float, help="Seconds from now.")
@click.option("--priority", type=int)
@click.option("--queue")
@click.option("--key", help="Unique key: at most one active job per key.")
def enqueue(task_name: str, args_json: str, kwargs_json: str,
            delay: float | None, priority: int | None, queue: str | None,
            key: str | None) -> None:
    """Enqueue TASK_NAME with JSON arguments."""
    from .errors import PayloadError

    app = open_app(need_app="enqueue checks the arguments against your task's code")
    try:
        args = json.loads(args_json)
        kwargs = json.loads(kwargs_json)
    except json.JSONDecodeError as exc:
        raise PayloadError(f"--args/--kwargs must be JSON: {exc}") from None
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        raise PayloadError("--args must be a JSON list and --kwargs a JSON object")
    task = app.get_task(task_name)
    result = task.using(delay=delay, priority=priority, queue=queue, key=key) \
        .enqueue(*args, **kwargs)
    console.print(f"job {result.id} {'enqueued' if result.created else 'already active (key)'}")


@main.command()
@click.option("--db", default=None, help="SQLite file to use (default: a fresh temp file).")
@click.option("--jobs", "n_jobs", default=1000, show_default=True, help="Jobs in the burst.")
def demo(db: str | None, n_jobs: int) -> None:
    """A small app with three queues: enqueue a burst, run workers, watch it drain."""
    from .demo import run_demo

    run_demo(db, n_jobs)


# Sub-command groups that live in their own modules register themselves on `main`.
from . import cli_longjobs, cli_workflows  # noqa: E402, F401
from .cli_observe import register as _register_observe  # noqa: E402

_register_observe(main)  # health, top, metrics, dashboard
from .cli_schedules import register as _register_schedules  # noqa: E402

_register_schedules(main)  # schedules, cron

if __name__ == "__main__":
    # Run the importable module's group, where the sub-command modules registered.
    from shiftwork.cli import main as _main

    _main()
