"""``shiftwork jobs logs``: what a job logged while it ran, per attempt; ``--follow``
prints a running job's records as they are written, until it finishes."""

from __future__ import annotations

import time

import click

from shiftwork.cli.format import echo_json, format_state
from shiftwork.cli.options import (
    interval_option,
    job_id_argument,
    json_flag,
    open_app,
    target_options,
)
from shiftwork.core.safetext import escape_controls
from shiftwork.core.states import FINAL
from shiftwork.model.records import JobLogLine
from shiftwork.observe.text import format_time

#: Records read per statement.
BATCH = 1000


@click.command("logs")
@job_id_argument
@target_options
@click.option("--attempt", type=click.IntRange(min=1), default=None,
              help="Only this attempt's records (default: every attempt).")
@click.option("--follow", "-f", is_flag=True,
              help="Keep printing records as the job logs them, until it finishes.")
@interval_option(1.0, "Seconds between reads with --follow.")
@json_flag()
def jobs_logs(job_id: int, attempt: int | None, follow: bool, interval: float,
              as_json: bool) -> None:
    """What JOB_ID logged while it ran (through logging or ctx.log), per attempt."""
    app = open_app()
    after = (0, 0)
    printed = 0
    while True:
        # The job first (an unknown id: "no job N"): the records written before it finished
        # are then all read below (an attempt writes its last records before its outcome).
        job = app.get_job(job_id)
        while True:
            lines = app.store.job_logs.list_lines(job_id, attempt or 0, after, BATCH)
            for line in lines:
                _print(line, as_json)
            printed += len(lines)
            if lines:
                after = (lines[-1].attempt, lines[-1].seq)
            if len(lines) < BATCH:
                break
        if not follow or job.state in FINAL:
            break
        time.sleep(interval)
    if not as_json:
        if not printed:
            click.echo(f"job {job_id} logged nothing"
                       + (f" in attempt {attempt}" if attempt else "") + " (kept: records "
                       "at the levels your logging lets through, and ctx.log)", err=True)
        if follow:
            click.echo(f"job {job_id}: {format_state(job.state)}", err=True)


def _print(line: JobLogLine, as_json: bool) -> None:
    if as_json:  # one object a line, for jq and scripts
        echo_json({"attempt": line.attempt, "seq": line.seq, "at": line.at,
                   "level": line.level, "logger": line.logger, "message": line.message},
                  indent=None)
        return
    # A job's message may hold anything: control characters are shown, not obeyed.
    click.echo(escape_controls(f"{format_time(line.at)} #{line.attempt} {line.level:<7} "
                               f"{line.logger}: {line.message}", keep="\n"))
