"""``shiftwork jobs``: list, show, follow, retry, cancel, hold, release and edit jobs."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Callable
from typing import Any

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

from shiftwork.cli.format import console, echo_json, format_attempts, format_state, job_dict, warn
from shiftwork.cli.options import (
    interval_option,
    job_id_argument,
    job_ids_argument,
    json_flag,
    limit_option,
    open_app,
    parse_instant,
    queue_option,
    target_options,
)
from shiftwork.core.errors import JobStateError
from shiftwork.core.memory import format_size
from shiftwork.core.safetext import escape_controls
from shiftwork.core.states import FINAL, JobState
from shiftwork.jobs.bulk import bulk_apply, bulk_filter
from shiftwork.jobs.checkpoint import Progress as JobProgress
from shiftwork.jobs.checkpoint import describe_progress
from shiftwork.jobs.sealing import open_job
from shiftwork.jobs.task import PRIORITY_MAX, PRIORITY_MIN
from shiftwork.model.filter import SORTS, JobFilter, parse_filter, task_hint
from shiftwork.model.records import DepLink
from shiftwork.observe.text import break_name, format_time, make_table, shorten

# `queues`, `top` and the dashboard head the count of due jobs "waiting": the same word
# is taken here (and in job_filter.py) for the state they count.
WAITING = "waiting"
#: `jobs list` counts its matches exactly up to this many (as the dashboard does).
COUNT_CAP = 10_000
#: A bulk action counts its matches before asking, exactly up to this many.
BULK_COUNT_CAP = 10_000_000
BULK_DONE = {"retry": "retried", "cancel": "cancelled", "delete": "deleted", "hold": "held",
             "release": "released"}


@click.group()
@target_options
def jobs() -> None:
    """Inspect and act on jobs."""


def filter_options(fn: Any) -> Any:
    """The jobs console's filter (``job_filter.py``), every option optional, combined with
    AND: the same fields as the dashboard's ``/jobs``."""
    options = [
        click.option("--state", "states", multiple=True,
                     type=click.Choice([s.value for s in JobState] + [WAITING]),
                     help=f"Only jobs in this state (repeat for several); {WAITING} (as "
                          "queues and top count them) is available: due and not yet "
                          "claimed."),
        queue_option,
        click.option("--task", help="A part of the task name, any case."),
        click.option("--tag", help="One of the job's tags, whole (customer:42)."),
        click.option("--error", help="A part of the last error (type: message), any case."),
        click.option("--created-from", help="Created at or after (ISO 8601, UTC)."),
        click.option("--created-to", help="Created before (ISO 8601, UTC)."),
        click.option("--finished-from", help="Finished at or after (ISO 8601, UTC)."),
        click.option("--finished-to", help="Finished before (ISO 8601, UTC)."),
        click.option("--key", "unique_key", help="The unique key, whole."),
        click.option("--id", "job_id", help="One job id."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def read_filter(states: tuple[str, ...], given: dict[str, Any]) -> JobFilter:
    """The filter of ``filter_options``' values."""
    fields = {("id" if k == "job_id" else k): v for k, v in given.items()}
    return parse_filter({"state": ",".join(states), **fields})


@jobs.command("list")
@target_options
@filter_options
@click.option("--sort", type=click.Choice(SORTS), default=SORTS[0], show_default=True,
              help="Newest first by creation, due time or finish time.")
@click.option("--after", "after_id", type=click.IntRange(1),
              help="The next page: the jobs after this id (the last one listed).")
@limit_option(50)
@json_flag()
def jobs_list(states: tuple[str, ...], sort: str, after_id: int | None, limit: int,
              as_json: bool, **given: Any) -> None:
    """List jobs, newest first; the options filter them."""
    app = open_app()
    f = read_filter(states, given)
    # sealed payloads opened with the App's keys, else "encrypted"
    found = [open_job(app.runtime.keys, j) for j in app.store.console.page(f, sort, after_id,
                                                                          limit)]
    if f.task and not found:
        hint_unknown_task(app, f.task)
    if as_json:
        echo_json([job_dict(j) for j in found])
        return
    # The progress column only when a job has progress: 80 columns are few.
    with_progress = any(j.progress is not None for j in found)
    id_width = max((len(str(j.id)) for j in found), default=2)
    # What the fixed columns (id, state, attempt, run at, progress) and the gaps take.
    spare = console.width - 50 - id_width - (18 if with_progress else 0)
    # In a narrow terminal the last errors go below the table, one line each: a column
    # of their own would be a few characters wide.
    errors_below = spare < 60
    table = make_table(("id", "task", "queue", "state", "attempt")
                       + (("progress",) if with_progress else ()) + ("run at (UTC)",)
                       + (() if errors_below else ("last error",)),
                       right=("id", "attempt"),
                       whole=("id", "task", "queue", "state", "attempt", "run at (UTC)"))
    # Task and queue names are broken at their dots and underscores, never mid-word.
    task_width = name_width([j.task for j in found], spare * (3 if errors_below else 2) // 5)
    queue_width = name_width([j.queue for j in found], spare * (2 if errors_below else 1) // 5)
    below: list[str] = []
    for j in found:
        last = j.errors[-1] if j.errors else None
        error = f"{last['type']}: {last['message']}" if last else ""
        if error and errors_below:
            below.append(shorten(f"{str(j.id).rjust(id_width)}  {error}", console.width - 2))
        table.add_row(str(j.id), break_name(j.task, task_width),
                      break_name(j.queue, queue_width), format_state(j.state),
                      f"{j.counted_attempt}/{j.max_attempts}",
                      *((shorten(describe_progress(j.progress), 40),) if with_progress else ()),
                      format_time(j.run_at),
                      *(() if errors_below else (shorten(error, 60),)))
    console.print(table)
    if below:
        console.print("last errors:\n" + "\n".join(f"  {line}" for line in below),
                      markup=False, highlight=False)
    count = app.store.console.count_upto(f, COUNT_CAP + 1)
    total = f"more than {COUNT_CAP:,}" if count > COUNT_CAP else f"{count:,}"
    tail = f"; the next page: --after {found[-1].id}" if found and len(found) == limit \
        and count > limit else ""
    console.print(f"{total} matching, {len(found)} shown{tail}", markup=False,
                  highlight=False)


def name_width(names: list[str], share: int) -> int:
    """A names column's width: the longest name if it fits its share of the line, else the
    share, but never less than the longest word of a name (so none is cut inside)."""
    words = max((len(w) for n in names for w in re.findall(r"[^._-]*[._-]?", n)), default=4)
    return max(words, min(max((len(n) for n in names), default=4), max(share, 8)))


def hint_unknown_task(app: Any, task: str) -> None:
    """Nothing listed for a part of a task name that no code declares and no recent job
    carries: most likely a typo, so say which names are close."""
    known = set(app.tasks) | {j.task for j in app.list_jobs(limit=500)}
    hint = task_hint(task, known)
    if hint:
        warn(f"{hint} (task names are module.function unless the task sets name=)")


@jobs.command("show")
@job_id_argument
@target_options
@json_flag()
def jobs_show(job_id: int, as_json: bool) -> None:
    """Everything about one job, with its error history."""
    app = open_app()
    job = app.get_job(job_id)
    parents, children = app.store.deps.links_of(job_id)
    member_of, callback_of = app.store.deps.groups_of_job(job_id)
    if as_json:
        echo_json({**job_dict(job), "dependencies": [link_dict(p) for p in parents],
                   "dependents": [link_dict(c) for c in children],
                   "groups": member_of, "callback_of_group": callback_of})
        return
    console.print(Text.assemble((f"job {job.id}", "bold"), escape_controls(
        f"  {job.task}  queue={job.queue}  state={format_state(job.state)}  "
        f"{format_attempts(job)}")))
    console.print(f"args={json.dumps(job.args)} kwargs={json.dumps(job.kwargs)}",
                  markup=False, highlight=False)
    console.print(f"created {format_time(job.created_at)}  run at {format_time(job.run_at)}  "
                  f"attempted {format_time(job.attempted_at)}  "
                  f"finished {format_time(job.finished_at)}")
    if job.unique_key:
        console.print(f"unique key: {job.unique_key}", markup=False)
    if job.items is not None:
        console.print(f"items processed: {job.items}", markup=False)
    if job.tags:
        console.print(f"tags: {', '.join(job.tags)}", markup=False, highlight=False)
    if job.progress is not None:
        console.print(f"progress: {describe_progress(job.progress) or json.dumps(job.progress)}",
                      markup=False)
    if job.checkpoint is not None:
        console.print(f"checkpoint: {json.dumps(job.checkpoint)}", markup=False)
    if job.result is not None:
        console.print(f"result: {json.dumps(job.result)}", markup=False)
    if job.attempt_peaks:  # a task with a memory ceiling: each attempt's peak
        console.print("peak memory: " + ", ".join(
            f"attempt {attempt} {format_size(peak)}" for attempt, peak in job.attempt_peaks),
            markup=False)
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
        # Numbered by run (jobs.attempt), which the header's counted attempt may trail.
        console.print(Text.assemble(("\nrun " + escape_controls(str(err.get("attempt"))),
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


def bulk_options(fn: Any) -> Any:
    """JOB_IDS, or (none given) the filter, with ``--dry-run`` and ``--yes``."""
    decorators: list[Callable[[Any], Any]] = [
            click.argument("job_ids", type=int, nargs=-1),
            target_options, filter_options,
            click.option("--dry-run", is_flag=True,
                         help="Only count the jobs the filter matches."),
            click.option("--yes", is_flag=True,
                         help="Do not ask before acting on every match (for scripts).")]
    for decorate in reversed(decorators):
        fn = decorate(fn)
    return fn


def run_bulk(action: str, states: tuple[str, ...], dry_run: bool, yes: bool,
             given: dict[str, Any]) -> None:
    """``action`` on every job the filter matches: counted, confirmed (unless --yes), then
    run in batches and audited (bulk.py)."""
    app = open_app()
    f = bulk_filter(action, read_filter(states, given))
    count = app.store.console.count_upto(f, BULK_COUNT_CAP + 1)
    counted = f"more than {BULK_COUNT_CAP:,}" if count > BULK_COUNT_CAP else f"{count:,}"
    if dry_run:
        click.echo(f"{counted} jobs match {f.describe()}: would {action} them (dry run)")
        return
    if not count:
        click.echo(f"no jobs match {f.describe()}: nothing to {action}")
        return
    if not yes:
        if not sys.stdin.isatty():
            warn(f"{counted} jobs match {f.describe()}: pass --yes to {action} them without "
                 "a question (or --dry-run to count only)")
            raise SystemExit(1)
        click.confirm(f"{action} {counted} jobs matching {f.describe()}?", abort=True)
    result = bulk_apply(app, action, f, who=cli_user(),
                        progress=lambda matched, done: click.echo(
                            f"  {matched:,} read, {done:,} done", err=True))
    click.echo(f"{BULK_DONE[action]} {result.done:,} of {result.matched:,} jobs matching "
               f"{f.describe()}")


def cli_user() -> str:
    """Who acted, for the audit: the login name and host."""
    import getpass
    import socket

    try:
        user = getpass.getuser()
    except Exception:  # no name for this uid (a container)
        user = f"uid {os.getuid()}"
    return f"{user}@{socket.gethostname()} (cli)"


@jobs.command("retry")
@bulk_options
def jobs_retry(job_ids: tuple[int, ...], states: tuple[str, ...], dry_run: bool, yes: bool,
               **given: Any) -> None:
    """Make dead, cancelled or waiting jobs run again now: JOB_IDS, or every job the
    filter matches (``--state dead --queue billing --error timeout``)."""
    if not job_ids:
        run_bulk("retry", states, dry_run, yes, given)
        return
    app = open_app()
    for job_id in job_ids:
        job = app.retry_job(job_id)
        console.print(f"job {job.id}: {format_state(job.state)}")


@jobs.command("cancel")
@bulk_options
def jobs_cancel(job_ids: tuple[int, ...], states: tuple[str, ...], dry_run: bool, yes: bool,
                **given: Any) -> None:
    """Cancel waiting jobs; ask the worker running a running job to stop it: JOB_IDS, or
    every job the filter matches (``--state waiting --task import``).

    A job that has already finished cannot be cancelled: it is named, the others are
    cancelled, and the command exits 1 (a refused action)."""
    if not job_ids:
        run_bulk("cancel", states, dry_run, yes, given)
        return
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


@jobs.command("delete")
@bulk_options
def jobs_delete(job_ids: tuple[int, ...], states: tuple[str, ...], dry_run: bool, yes: bool,
                **given: Any) -> None:
    """Delete finished jobs (succeeded, dead, cancelled): JOB_IDS, or every finished job
    the filter matches (``--state dead --finished-to 2026-11-01``)."""
    if not job_ids:
        run_bulk("delete", states, dry_run, yes, given)
        return
    app = open_app()
    deleted = set(app.store.console.delete_finished(list(job_ids)))
    for job_id in job_ids:
        click.echo(f"job {job_id}: " + ("deleted" if job_id in deleted
                                        else "not deleted (missing, or not finished)"))
    if len(deleted) < len(set(job_ids)):
        raise SystemExit(1)


def each_job(job_ids: tuple[int, ...], act: Callable[[int], Any]) -> None:
    """``act`` on each id, printing the job's state after; a refusal (``JobStateError``)
    is named and the others go on, and the command then exits 1."""
    refused = 0
    for job_id in job_ids:
        try:
            job = act(job_id)
        except JobStateError as exc:
            click.echo(str(exc), err=True)
            refused += 1
            continue
        note = " (hold requested: held if its attempt would run again)" \
            if job.state is JobState.RUNNING and job.hold_requested else ""
        console.print(f"job {job.id}: {format_state(job.state)}{note}")
    if refused:
        raise SystemExit(1)


@jobs.command("hold")
@bulk_options
def jobs_hold(job_ids: tuple[int, ...], states: tuple[str, ...], dry_run: bool, yes: bool,
              **given: Any) -> None:
    """Hold jobs: a waiting job is not claimed until released; a running one finishes its
    attempt and is held if it would run again: JOB_IDS, or every job the filter matches
    (``--queue imports``). Finished jobs are refused (exit 1)."""
    if not job_ids:
        run_bulk("hold", states, dry_run, yes, given)
        return
    app = open_app()
    who = cli_user()
    each_job(job_ids, lambda job_id: app.hold(job_id, who=who))


@jobs.command("release")
@bulk_options
def jobs_release(job_ids: tuple[int, ...], states: tuple[str, ...], dry_run: bool, yes: bool,
                 **given: Any) -> None:
    """Release held jobs (scheduled while their run_at is ahead, else due now): JOB_IDS,
    or every held job the filter matches. A job not held is refused (exit 1)."""
    if not job_ids:
        run_bulk("release", states, dry_run, yes, given)
        return
    app = open_app()
    who = cli_user()
    each_job(job_ids, lambda job_id: app.release(job_id, who=who))


@jobs.command("run-now")
@target_options
@job_ids_argument
def jobs_run_now(job_ids: tuple[int, ...]) -> None:
    """Make scheduled, retrying or held jobs due now (retry runs a dead one again)."""
    app = open_app()
    who = cli_user()
    each_job(job_ids, lambda job_id: app.run_now(job_id, who=who))


@jobs.command("update")
@target_options
@job_id_argument
@click.option("--run-at", "run_at", metavar="INSTANT",
              help="When it may run: ISO 8601 with a zone (2026-12-01T09:00:00Z).")
@click.option("--priority", type=click.IntRange(PRIORITY_MIN, PRIORITY_MAX),
              help="Higher runs first within its queue.")
@click.option("--queue", "new_queue", metavar="NAME", help="Move it to this queue.")
def jobs_update(job_id: int, run_at: str | None, priority: int | None,
                new_queue: str | None) -> None:
    """Edit a waiting or held job (a running or finished one is refused, exit 1)."""
    if run_at is None and priority is None and new_queue is None:
        raise click.UsageError("give --run-at, --priority or --queue")
    when = parse_instant(run_at, "--run-at") if run_at is not None else None
    app = open_app()
    who = cli_user()
    each_job((job_id,), lambda i: app.update_job(i, run_at=when, priority=priority,
                                                 queue=new_queue, who=who))


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
