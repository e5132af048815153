"""``shiftwork cron``: check a schedule's expression (cron, ``every 90m``, ``... except
DATES``) by printing its next fire instants."""

from __future__ import annotations

from datetime import UTC, datetime

import click

from shiftwork.cli.format import console, echo_json
from shiftwork.cli.options import after_option, count_option, json_flag, parse_instant
from shiftwork.schedules.definition import iso_z
from shiftwork.schedules.interval import timetable


@click.command("cron")
@click.argument("expr")
@click.option("--tz", default="UTC", show_default=True, help="IANA time zone.")
@after_option("Start after this instant (ISO 8601 with Z or an offset; default: now).")
@count_option(5, "How many fire instants.")
@json_flag("Print a JSON list of UTC instants (ISO 8601 with Z).")
def cron(expr: str, tz: str, after: str | None, count: int, as_json: bool) -> None:
    """Check a schedule's expression (a cron string, `every 90m [from INSTANT]`, either
    with `except DATE,...`): print its next fire instants in UTC and local time."""
    if count < 1:
        raise click.BadParameter("must be at least 1", param_hint="-n")
    sched = timetable(expr, tz)  # a CronError names the bad part; the root group prints it
    start = parse_instant(after, "--after") if after else datetime.now(UTC)
    fires = []
    for f in sched.iter_after(start):
        fires.append(f)
        if len(fires) >= count:
            break
    if as_json:
        echo_json([iso_z(f) for f in fires], indent=None)
        return
    for f in fires:
        console.print(f"{iso_z(f)}  {sched.local(f).isoformat()}", highlight=False)
