"""``shiftwork queues``: per-queue counts, and pausing or resuming a queue."""

from __future__ import annotations

import sys
from typing import Any

import click

from shiftwork.cli.format import console, echo_json, queue_table, warn
from shiftwork.cli.options import json_flag, name_argument, open_app, target_options
from shiftwork.observe.history import by_name, summarize
from shiftwork.observe.text import format_age, format_seconds, make_table
from shiftwork.observe.views import BUSIEST_GROUPS


@click.group(invoke_without_command=True)
@target_options
@json_flag("Print JSON: each queue with its five-minute history buckets (\"history\").")
@click.option("--tasks", "per_task", is_flag=True,
              help="The history per task instead (finished, failures, p95, oldest waiting).")
@click.option("--hours", type=click.FloatRange(min=0, min_open=True, max=24 * 366),
              default=24.0, show_default=True, help="How far back the history goes.")
@click.pass_context
def queues(ctx: click.Context, as_json: bool, per_task: bool, hours: float) -> None:
    """Per queue: waiting (state available: due, not yet claimed), running, scheduled,
    dead, and the oldest waiting job's age; then the last hours' history (the leader's
    five-minute buckets): finished, failures, p95 run time, oldest waiting."""
    if ctx.invoked_subcommand is not None:
        return
    app = open_app()
    queue_rows, task_rows = by_name(app.history(hours=hours))
    if per_task:
        if as_json:
            echo_json([{"task": t, **summarize(rows).to_dict(),
                        "history": [r.to_dict() for r in rows]}
                       for t, rows in sorted(task_rows.items())])
        else:
            console.print(history_table("task", task_rows, hours))
        return
    stats = app.queue_stats()
    if as_json:
        echo_json([{**s.__dict__, "history": [r.to_dict() for r in queue_rows.get(s.queue, [])]}
                   for s in stats])
        return
    console.print(queue_table(stats))
    if queue_rows:
        console.print(history_table("queue", queue_rows, hours))
    limits = app.rate_limits()
    if limits:
        table = make_table(("rate limit", "allows", "tokens now"), whole=("tokens now",))
        for s in limits:
            if s.key.endswith(":*"):
                tokens = "per group"
            else:
                tokens = "full" if s.tokens is None else f"{s.tokens:.1f}"
            table.add_row(s.key, str(s.limit), tokens)
        console.print(table)
    groups = app.store.observe.groups_busiest(limit=BUSIEST_GROUPS)
    if groups:
        table = make_table(("queue", "group", "waiting", "running"),
                           right=("waiting", "running"), title="busiest groups")
        for g in groups:
            fair = app.queue_options.get(g.queue)
            queue = g.queue + (" (fair)" if fair and fair.fair else "")
            table.add_row(queue, g.group, str(g.waiting), str(g.running))
        console.print(table)


def history_table(kind: str, rows: dict[str, list[Any]], hours: float) -> Any:
    """One line per queue or task: its window's history in a few figures."""
    counts = ("finished", "failures", "worst p95", "oldest waiting")
    table = make_table((kind, *counts), title=f"last {hours:g} h (5-minute buckets)",
                       right=counts, whole=counts)
    for name, its in sorted(rows.items()):
        s = summarize(its)
        table.add_row(name, str(s.finished), str(s.failures), format_seconds(s.worst_p95),
                      format_age(s.oldest_wait))
    return table


FORCE = click.option("--force", is_flag=True,
                     help="Act on a queue that is not known yet (no task declares it, no "
                          "job is in it): without it, such a name is taken for a typo.")


def refuse_unknown(app: Any, name: str, force: bool, verb: str) -> None:
    """A queue name nobody declared and the table has not seen is most likely a typo:
    refused (exit 1), since pausing it would make a queue row of its own; ``--force``
    acts anyway, with the warning."""
    message = app.unknown_queue_warning(name)
    if message is None:
        return
    if force:
        warn(message)
        return
    click.echo(f"error: {message}; nothing {verb} (--force to act on it anyway)", err=True)
    sys.exit(1)


@queues.command("pause")
@name_argument
@FORCE
@target_options
def queues_pause(name: str, force: bool) -> None:
    """Stop claims on queue NAME; its running jobs stop at their next checkpoint."""
    app = open_app()
    refuse_unknown(app, name, force, "paused")
    app.pause_queue(name)
    console.print(f"queue {name}: paused (running jobs go back to waiting at their next "
                  "checkpoint; jobs that never checkpoint run to the end)", highlight=False)


@queues.command("resume")
@name_argument
@FORCE
@target_options
def queues_resume(name: str, force: bool) -> None:
    """Claim from queue NAME again; paused jobs continue from their checkpoints."""
    app = open_app()
    refuse_unknown(app, name, force, "resumed")
    app.resume_queue(name)
    console.print(f"queue {name}: resumed", highlight=False)


@queues.command("clear-backoff")
@click.argument("limit")
@target_options
def queues_clear_backoff(limit: str) -> None:
    """End the hold on rate limit LIMIT now: task:NAME or queue:NAME, as the rate limit
    table above lists it (a hold set by ctx.rate_limited(retry_after=...))."""
    app = open_app()
    if app.clear_backoff(limit):
        console.print(f"{limit}: cleared (its bucket starts full again)", highlight=False)
    else:
        console.print(f"{limit}: nothing to clear (no bucket stored)", highlight=False)
