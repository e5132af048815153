"""``shiftwork health``: a probe's exit code, 0 when work is flowing and 1 when not."""

from __future__ import annotations

import sys

import click

from shiftwork.cli.format import echo_json
from shiftwork.cli.options import app_argument, json_flag, open_app, target_options
from shiftwork.core.safetext import escape_controls


@click.command()
@app_argument
@target_options
@click.option("--max-wait", type=float, metavar="SECONDS",
              help="Threshold for queues that declare no max_wait of their own.")
@click.option("--no-worker-ok", is_flag=True, help="Do not fail when no worker is alive.")
@json_flag("Print the report as JSON.")
def health(max_wait: float | None, no_worker_ok: bool, as_json: bool) -> None:
    """Exit 0 when work is flowing; 1, saying why, when a queue is over its max_wait,
    a schedule is late, no worker is alive or the jobs table is unhealthy (2 on a usage
    or connection error). Warnings (the table's dead tuples, a transaction holding back
    vacuum, index bloat) are printed and still exit 0."""
    from shiftwork.observe.health import check_health
    from shiftwork.observe.table_health import table_json, table_lines

    app = open_app()
    if max_wait is not None and max_wait <= 0:
        raise click.BadParameter("must be > 0 seconds", param_hint="--max-wait")
    report = check_health(app, default_max_wait=max_wait, require_worker=not no_worker_ok)
    if as_json:
        echo_json({
            "ok": report.ok, "status": report.status, "workers_alive": report.workers_alive,
            "problems": [p.__dict__ for p in report.problems],
            "warnings": [p.__dict__ for p in report.warnings],
            "table": table_json(report.table) if report.table else None,
            "queues": [{"queue": s.queue, "waiting": s.available, "paused": s.paused,
                        "oldest_waiting_age": s.oldest_waiting_age} for s in report.queues],
        })
        sys.exit(0 if report.ok else 1)
    # A paused queue is not a failure, but a probe's reader must not take it for a live one.
    paused = [s.queue for s in report.queues if s.paused]
    note = escape_controls(f" (paused: {', '.join(paused)})") if paused else ""
    if report.ok:
        click.echo(f"ok: {len(report.queues)} queues within their thresholds{note}, "
                   f"{report.workers_alive} workers alive"
                   + (f", {len(report.schedules)} schedules on time" if report.schedules else ""))
    else:
        for problem in report.problems:
            # A message names queues and schedules: user strings, escaped for the terminal.
            click.echo(f"UNHEALTHY {problem.kind}: {escape_controls(problem.message)}")
        if paused:
            click.echo(escape_controls(f"paused: {', '.join(paused)}"))
    for warning in report.warnings:
        click.echo(f"WARNING {warning.kind}: {escape_controls(warning.message)}")
    # Names of indexes and an application_name are the database's text: escaped too.
    for line in table_lines(report.table) if report.table else []:
        click.echo(escape_controls(line))
    sys.exit(0 if report.ok else 1)
