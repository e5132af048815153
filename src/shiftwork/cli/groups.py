"""``shiftwork groups``: a group of jobs, its progress and its callback."""

from __future__ import annotations

import click

from shiftwork.cli.format import console, echo_json
from shiftwork.cli.options import json_flag, limit_option, open_app, target_options
from shiftwork.observe.text import format_time, make_table


@click.group()
@target_options
def groups() -> None:
    """Inspect groups of jobs (app.group)."""


@groups.command("show")
@click.argument("group_id", type=int)
@target_options
@limit_option(20)
@json_flag()
def groups_show(group_id: int, limit: int, as_json: bool) -> None:
    """A group's progress, its callback and its first members."""
    app = open_app()
    info = app.store.deps.group_get(group_id)
    members = app.store.deps.group_members(group_id)
    callback = app.get_job(info.callback_id) if info.callback_id is not None else None
    if as_json:
        echo_json({"id": info.id, "total": info.total, "done": info.done,
                   "failed": info.failed, "counts": info.counts,
                   "created_at": info.created_at.isoformat(),
                   "callback": None if callback is None else
                   {"id": callback.id, "task": callback.task, "state": callback.state.value},
                   "members": members})
        return
    console.print(f"group {info.id}  created {format_time(info.created_at)}  "
                  f"{info.done} done, {info.failed} failed, {info.total} total", markup=False)
    console.print(", ".join(f"{state} {n}" for state, n in sorted(info.counts.items())),
                  markup=False)
    if callback is None:
        console.print("callback: none", markup=False)
    else:
        console.print(f"callback: job {callback.id} {callback.task} {callback.state.value}",
                      markup=False)
    table = make_table(("id", "task", "state", "finished (UTC)"), right=("id",),
                       whole=("id", "state", "finished (UTC)"))
    for job_id in members[:limit]:
        job = app.get_job(job_id)
        table.add_row(str(job.id), job.task, job.state.value, format_time(job.finished_at))
    console.print(table)
    if len(members) > limit:
        console.print(f"... and {len(members) - limit} more (--limit)", markup=False)
