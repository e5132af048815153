"""``shiftwork migrate``: create or upgrade the database schema; with
``--partition-history``, then partition the jobs table (PostgreSQL, online)."""

from __future__ import annotations

import click

from shiftwork.cli.format import console
from shiftwork.cli.options import open_app, target_options
from shiftwork.model.history_layout import INTERVALS


@click.command()
@target_options
@click.option("--partition-history", is_flag=True,
              help="Then move finished jobs to time partitions, which retention drops "
                   "whole (PostgreSQL only; online: docs/deploy.md, \"Partitioned history\").")
@click.option("--interval", type=click.Choice(sorted(INTERVALS)), default="day",
              show_default=True, help="Each partition's range of finish times.")
def migrate(partition_history: bool, interval: str) -> None:
    """Create or upgrade the database schema."""
    app = open_app()
    applied = app.migrate()
    console.print(f"applied migrations: {applied}" if applied else "schema is up to date")
    if partition_history and app.store.engine != "postgres":
        raise click.ClickException("--partition-history: partitioned history is PostgreSQL "
                                   "only; SQLite prunes its history row by row")
    if partition_history:
        partitions = app.store.partitions  # type: ignore[attr-defined]
        if not partitions.convert(interval, say=lambda step: console.print(f"  {step}")):
            console.print("history is already partitioned")
