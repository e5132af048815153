"""``shiftwork migrate``: create or upgrade the database schema."""

from __future__ import annotations

import click

from shiftwork.cli.format import console
from shiftwork.cli.options import open_app, target_options


@click.command()
@target_options
def migrate() -> None:
    """Create or upgrade the database schema."""
    app = open_app()
    applied = app.migrate()
    console.print(f"applied migrations: {applied}" if applied else "schema is up to date")
