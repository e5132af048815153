"""``shiftwork metrics``: one Prometheus scrape on stdout."""

from __future__ import annotations

import click

from shiftwork.cli.options import app_argument, open_app, target_options


@click.command()
@app_argument
@target_options
def metrics() -> None:
    """Print one Prometheus scrape (queue, worker and schedule gauges) and exit."""
    import sys

    from shiftwork.core.safetext import escape_controls
    from shiftwork.observe.metrics import Metrics

    text = Metrics(open_app()).exposition().decode()
    # Label values hold schedule names as stored: escaped on a terminal; piped to a tool,
    # the exposition is left as Prometheus reads it.
    click.echo(escape_controls(text, keep="\n") if sys.stdout.isatty() else text, nl=False)
