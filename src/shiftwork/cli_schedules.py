"""``shiftwork schedules ...`` and ``shiftwork cron``: inspect and steer schedules."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from .cli_target import open_app, target_options
from .cron import CronSchedule
from .names import did_you_mean
from .safetext import plain_console
from .schedule import Catchup, Overlap, ScheduleInfo, iso_z

console = plain_console()

def register(group: click.Group) -> None:
    """Attach ``schedules`` and ``cron`` to the ``shiftwork`` command group."""
    group.add_command(schedules)
    group.add_command(cron_command)


def parse_instant(text: str, what: str) -> datetime:
    """ISO 8601 with an offset or ``Z``; a bare date or time without a zone is refused."""
    try:
        t = datetime.fromisoformat(text.replace("z", "Z").replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(f"{text!r} is not an ISO 8601 instant, e.g. "
                                 "2025-03-08T12:00:00Z", param_hint=what) from None
    if t.tzinfo is None:
        raise click.BadParameter(f"{text!r} has no time zone; add Z or an offset such as "
                                 "+01:00", param_hint=what)
    return t.astimezone(UTC)


def _local(info_tz: str, t: datetime | None) -> str:
    if t is None:
        return "-"
    return CronSchedule("* * * * *", info_tz).local(t).strftime("%Y-%m-%d %H:%M:%S%z")


def _utc(t: datetime | None) -> str:
    return iso_z(t.replace(microsecond=0)) if t else "-"


def info_dict(info: ScheduleInfo) -> dict[str, Any]:
    d = info.defn
    return {
        "name": d.name, "cron": d.cron, "tz": d.tz, "task": d.task, "queue": d.queue,
        "next_fire_utc": iso_z(info.next_fire_at) if info.next_fire_at else None,
        "next_fire_local": (d.cron_schedule().local(info.next_fire_at).isoformat()
                            if info.next_fire_at else None),
        "last_fire_utc": iso_z(info.last_fire_at) if info.last_fire_at else None,
        "last_success_utc": iso_z(info.last_success_at) if info.last_success_at else None,
        "late": info.late(), "paused": info.paused, "paused_reason": info.paused_reason,
        "catchup": d.catchup.value, "overlap": d.overlap.value, "not_run": info.not_run,
        "pending": info.pending, "removed": info.removed_at is not None,
    }


@click.group(invoke_without_command=True)
@target_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def schedules(ctx: click.Context, as_json: bool) -> None:
    """List schedules: next fire (UTC and local), last fire, last success, late, paused.

    NAME is the schedule's name as declared: the task's module.function for
    @app.periodic, unless name= chose one (shiftwork schedules lists them)."""
    if ctx.invoked_subcommand is not None:
        return
    app = open_app()
    infos = app.store.schedules_list()
    if as_json:
        click.echo(json.dumps([info_dict(i) for i in infos], indent=2))
        return
    table = Table(title="schedules")
    for col in ("name", "cron", "tz", "next fire (UTC)", "next fire (local)", "last fire",
                "last success", "late", "paused", "not run"):
        table.add_column(col)
    for i in infos:
        table.add_row(i.name, i.defn.cron, i.defn.tz, _utc(i.next_fire_at),
                      _local(i.defn.tz, i.next_fire_at), _utc(i.last_fire_at),
                      _utc(i.last_success_at), Text("LATE", style="red") if i.late() else "",
                      "paused" if i.paused else "", str(i.not_run))
    console.print(table)


def _app(name: str) -> Any:
    """The app, once NAME is known to be one of its schedules (else "did you mean")."""
    app = open_app()
    check_schedule_name(app, name)
    return app


def check_schedule_name(app: Any, name: str) -> None:
    """Refuse a name that is neither declared in code nor stored, naming the known ones."""
    from .store.schedules import UnknownScheduleError

    if name in app.schedules:
        return
    stored = {i.name for i in app.store.schedules_list() if i.removed_at is None}
    if name in stored:
        return
    known = sorted(set(app.schedules) | stored)
    raise UnknownScheduleError(
        f"no schedule named {name!r}{did_you_mean(name, known)} (known: "
        f"{', '.join(known) or 'none'}; a schedule's name is its task's module.function "
        "unless name= chose one)")


@schedules.command("next")
@target_options
@click.argument("name")
@click.option("-n", "count", default=10, show_default=True, help="How many fire times.")
@click.option("--after", help="Start after this instant (ISO 8601 with Z or an offset).")
def schedules_next(name: str, count: int, after: str | None) -> None:
    """Preview NAME's next fire times in UTC and local time (check DST before deploying)."""

    app = _app(name)
    start = parse_instant(after, "--after") if after else None
    defn = app.schedules.get(name) or app.store.schedules_get(name).defn
    cron = defn.cron_schedule()
    for f in app.schedules.preview(name, count, start):
        console.print(f"{iso_z(f)}  {cron.local(f).isoformat()}", highlight=False)


@schedules.command("pause")
@target_options
@click.argument("name")
def schedules_pause(name: str) -> None:
    """Stop firing NAME until resumed."""

    _app(name).schedules.pause(name)
    console.print(f"paused {name}")


@schedules.command("resume")
@target_options
@click.argument("name")
@click.option("--catchup", type=click.Choice([c.value for c in Catchup]),
              help="Apply this catch-up policy to what came due while paused "
                   "(default: record it as skipped and carry on from now).")
def schedules_resume(name: str, catchup: str | None) -> None:
    """Resume NAME."""

    plan = _app(name).schedules.resume(name, catchup)
    if plan is None:
        console.print(f"{name} was not paused")
    elif catchup:
        console.print(f"resumed {name}; the leader catches up with catchup={catchup}")
    else:
        console.print(f"resumed {name}; {len(plan.new) + plan.missed_unrecorded} occurrences "
                      "that came due while paused were recorded as skipped")


@schedules.command("trigger")
@target_options
@click.argument("name")
def schedules_trigger(name: str) -> None:
    """Run NAME now (one extra occurrence, keyed on the current instant)."""

    job_id = _app(name).schedules.trigger(name)
    console.print(f"enqueued job {job_id} for {name}")


@schedules.command("backfill")
@target_options
@click.argument("name")
@click.option("--from", "start", required=True, help="First instant (ISO 8601, inclusive).")
@click.option("--to", "end", required=True, help="Last instant (ISO 8601, inclusive).")
@click.option("--overlap", type=click.Choice([Overlap.BUFFER_ALL.value,
                                              Overlap.ALLOW_ALL.value]),
              default=Overlap.BUFFER_ALL.value, show_default=True,
              help="buffer_all: one at a time, oldest first; allow_all: all at once.")
def schedules_backfill(name: str, start: str, end: str,
                       overlap: str) -> None:
    """Run NAME's occurrences in a window that never ran (never duplicates one that did)."""

    counts = _app(name).schedules.backfill(name, parse_instant(start, "--from"),
                                           parse_instant(end, "--to"), overlap)
    console.print(f"backfill {name}: {counts['new']} new, {counts['rerun']} missed/skipped "
                  f"ones re-run, {counts['already']} already ran (left alone)")


@schedules.command("runs")
@target_options
@click.argument("name")
@click.option("--limit", default=20, show_default=True)
def schedules_runs(name: str, limit: int) -> None:
    """Recent occurrences of NAME, including missed and skipped ones and why."""
    app = _app(name)
    table = Table(title=f"{name}: recent occurrences")
    for col in ("fire (UTC)", "kind", "status", "job", "late", "reason"):
        table.add_column(col)
    for r in app.store.schedule_runs_list(name, limit):
        table.add_row(iso_z(r.fire_at), r.kind.value, r.status.value,
                      str(r.job_id or "-"), "LATE" if r.dms == "late" else "", r.reason or "")
    console.print(table)


@click.command("cron")
@click.argument("expr")
@click.option("--tz", default="UTC", show_default=True, help="IANA time zone.")
@click.option("--after", help="Start after this instant (ISO 8601 with Z or an offset; "
                              "default: now).")
@click.option("-n", "count", default=5, show_default=True, help="How many fire instants.")
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON list of UTC instants (ISO 8601 with Z).")
def cron_command(expr: str, tz: str, after: str | None, count: int, as_json: bool) -> None:
    """Check a cron expression: print its next fire instants in UTC and local time."""
    if count < 1:
        raise click.BadParameter("must be at least 1", param_hint="-n")
    sched = CronSchedule(expr, tz)  # a CronError names the bad field; main prints it
    start = parse_instant(after, "--after") if after else datetime.now(UTC)
    fires = []
    for f in sched.iter_after(start):
        fires.append(f)
        if len(fires) >= count:
            break
    if as_json:
        click.echo(json.dumps([iso_z(f) for f in fires]))
        return
    for f in fires:
        console.print(f"{iso_z(f)}  {sched.local(f).isoformat()}", highlight=False)
