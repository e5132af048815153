"""``shiftwork schedules``: list schedules, add and remove run-time ones, preview, pause,
resume, trigger and backfill them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click
from rich.text import Text

from shiftwork.cli.format import console, echo_json, format_local
from shiftwork.cli.options import (
    after_option,
    count_option,
    json_flag,
    limit_option,
    name_argument,
    open_app,
    parse_instant,
    schedule_argument,
    target_options,
)
from shiftwork.core.errors import PayloadError
from shiftwork.core.names import did_you_mean, schedule_id, schedule_ref
from shiftwork.core.payload import parse_json
from shiftwork.model.items import ItemsCheck
from shiftwork.model.schedule_values import Catchup, DeadManCheck, Overlap
from shiftwork.observe.text import format_time, make_table
from shiftwork.schedules.definition import iso_z
from shiftwork.schedules.records import ScheduleInfo
from shiftwork.schedules.stored import schedules_of

if TYPE_CHECKING:
    from shiftwork.app import App


def info_dict(info: ScheduleInfo) -> dict[str, Any]:
    """A schedule as its ``--json`` object."""
    d = info.defn
    return {
        "name": d.name, "id": schedule_id(d.name), "cron": d.cron, "tz": d.tz, "task": d.task,
        "queue": d.queue,
        "next_fire_utc": iso_z(info.next_fire_at) if info.next_fire_at else None,
        "next_fire_local": (d.cron_schedule().local(info.next_fire_at).isoformat()
                            if info.next_fire_at else None),
        "last_fire_utc": iso_z(info.last_fire_at) if info.last_fire_at else None,
        "last_success_utc": iso_z(info.last_success_at) if info.last_success_at else None,
        "late": info.late(), "empty": info.empty(), "expect_items": d.expect_items,
        "expect_items_rule": d.expect_items_rule, "paused": info.paused,
        "paused_reason": info.paused_reason,
        "catchup": d.catchup.value, "overlap": d.overlap.value, "not_run": info.not_run,
        "pending": info.pending, "removed": info.removed_at is not None,
        "origin": info.origin,
    }


@click.group(invoke_without_command=True)
@target_options
@json_flag("Print JSON.")
@click.pass_context
def schedules(ctx: click.Context, as_json: bool) -> None:
    """List schedules: next fire (UTC and local), last fire, last success, late or empty,
    paused.

    NAME is the schedule's name as declared: the task's module.function for
    @app.periodic, unless name= chose one (shiftwork schedules lists them)."""
    if ctx.invoked_subcommand is not None:
        return
    app = open_app()
    infos = schedules_of(app.store).overview()
    if as_json:
        echo_json([info_dict(i) for i in infos])
        return
    table = make_table(("name", "cron", "tz", "next fire (UTC)", "next fire (local)",
                        "last fire (UTC)", "last success (UTC)", "alert", "paused", "not run",
                        "origin"),
                       title="schedules")
    for i in infos:
        # A name stored before names were checked is shown with its id, to act on it by.
        shown = i.name if schedule_ref(i.name) == i.name \
            else f"{i.name} (id {schedule_id(i.name)})"
        table.add_row(shown, i.defn.cron, i.defn.tz, format_time(i.next_fire_at),
                      format_local(i.next_fire_at, i.defn.tz), format_time(i.last_fire_at),
                      format_time(i.last_success_at),
                      _alert(i),
                      "paused" if i.paused else "", str(i.not_run), i.origin)
    console.print(table)
    # Code's schedules are stored by a worker's start-up reconcile: before any worker ran
    # (or after new ones were declared) the table lacks them, which is not "none".
    unstored = sorted(set(app.schedules) - {i.name for i in infos})
    if unstored:
        console.print(f"{len(unstored)} declared in code, not stored until a worker starts: "
                      f"{', '.join(unstored)} (`shiftwork schedules next NAME` previews one "
                      "now)", markup=False, highlight=False)


def _alert(info: ScheduleInfo) -> Text:
    """LATE (the dead-man switch) and EMPTY (a run succeeded with too few items)."""
    words = [w for w, on in (("LATE", info.late()), ("EMPTY", info.empty())) if on]
    return Text(" ".join(words), style="red")


def _app(name: str) -> App:
    """The app, once NAME is known to be one of its schedules (else "did you mean")."""
    app = open_app()
    check_schedule_name(app, name)
    return app


def check_schedule_name(app: App, name: str) -> None:
    """Refuse a name that is neither declared in code nor stored, naming the known ones."""
    from shiftwork.schedules.errors import UnknownScheduleError

    if name in app.schedules:
        return
    stored = {i.name for i in schedules_of(app.store).overview() if i.removed_at is None}
    if name in stored:
        return
    known = sorted(set(app.schedules) | stored)
    raise UnknownScheduleError(
        f"no schedule named {name!r}{did_you_mean(name, known)} (known: "
        f"{', '.join(known) or 'none'}; a schedule's name is its task's module.function "
        "unless name= chose one)")


@schedules.command("next")
@target_options
@schedule_argument
@count_option(10, "How many fire times.")
@after_option("Start after this instant (ISO 8601 with Z or an offset).")
def schedules_next(name: str, count: int, after: str | None) -> None:
    """Preview NAME's next fire times in UTC and local time (check DST before deploying)."""
    app = _app(name)
    start = parse_instant(after, "--after") if after else None
    defn = app.schedules.get(name) or schedules_of(app.store).get(name).defn
    cron = defn.cron_schedule()
    for f in app.schedules.preview(name, count, start):
        console.print(f"{iso_z(f)}  {cron.local(f).isoformat()}", highlight=False)


@schedules.command("pause")
@target_options
@schedule_argument
def schedules_pause(name: str) -> None:
    """Stop firing NAME until resumed."""
    _app(name).schedules.pause(name)
    console.print(f"paused {name}")


@schedules.command("resume")
@target_options
@schedule_argument
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
@schedule_argument
def schedules_trigger(name: str) -> None:
    """Run NAME now (one extra occurrence, keyed on the current instant)."""
    job_id = _app(name).schedules.trigger(name)
    console.print(f"enqueued job {job_id} for {name}")


@schedules.command("backfill")
@target_options
@schedule_argument
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
@schedule_argument
@limit_option(20)
def schedules_runs(name: str, limit: int) -> None:
    """Recent occurrences of NAME, including missed and skipped ones and why."""
    app = _app(name)
    table = make_table(("fire (UTC)", "kind", "status", "job", "items", "alert", "reason"),
                       title=f"{name}: recent occurrences")
    for r in schedules_of(app.store).runs_list(name, limit):
        alert = " ".join(w for w, on in (("LATE", r.dms is DeadManCheck.LATE),
                                         ("EMPTY", r.items_check is ItemsCheck.EMPTY)) if on)
        reason = "; ".join(x for x in (r.reason, r.items_note if alert else None) if x)
        table.add_row(iso_z(r.fire_at), r.kind.value, r.status.value,
                      str(r.job_id or "-"), "-" if r.items is None else str(r.items), alert,
                      reason)
    console.print(table)


@schedules.command("add")
@target_options
@name_argument
@click.argument("cron")
@click.argument("task_name")
@click.option("--args", "args_json", default="[]", help="JSON list of positional arguments.")
@click.option("--kwargs", "kwargs_json", default="{}", help="JSON object of keyword arguments.")
@click.option("--tz", default="UTC", show_default=True, help="IANA time zone of the cron.")
@click.option("--catchup", type=click.Choice([c.value for c in Catchup]), default="latest",
              show_default=True, help="What to run of the fires missed while down.")
@click.option("--overlap", type=click.Choice([o.value for o in Overlap]), default="skip",
              show_default=True, help="What to do when a fire comes while a run is active.")
@click.option("--queue", help="Queue for the runs (default: the task's).")
@click.option("--replace", is_flag=True, help="Replace a run-time schedule of that name.")
def schedules_add(name: str, cron: str, task_name: str, args_json: str, kwargs_json: str,
                  tz: str, catchup: str, overlap: str, queue: str | None,
                  replace: bool) -> None:
    """Add a run-time schedule NAME firing TASK_NAME on CRON (kept across worker starts;
    code's schedules stay code's). E.g. add report-acme "0 6 * * MON" report --args '["acme"]'
    --tz Europe/Paris."""
    app = open_app(need_app="schedules add checks the task and its arguments against your code")
    depth = app.settings.max_json_depth
    args = parse_json(args_json, "--args", depth)
    kwargs = parse_json(kwargs_json, "--kwargs", depth)
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        raise PayloadError("--args must be a JSON list and --kwargs a JSON object")
    defn = app.schedules.add(name, cron, task_name, args, kwargs, tz=tz, catchup=catchup,
                             overlap=overlap, queue=queue, replace=replace)
    nxt = app.schedules.preview(name, 1)
    when = f"; next fire {iso_z(nxt[0])}" if nxt else ""
    console.print(f"added {name}: {defn.task} on {defn.cron} ({defn.tz}){when}",
                  highlight=False)


@schedules.command("remove")
@target_options
@schedule_argument
def schedules_remove(name: str) -> None:
    """Remove the run-time schedule NAME (its history stays; adding it again revives it)."""
    open_app().schedules.remove(name)
    console.print(f"removed {name}")
