"""``shiftwork metrics``: one Prometheus scrape on stdout."""

from __future__ import annotations

import click

from .options import app_argument, open_app, target_options


@click.command()
@app_argument
@target_options
def metrics() -> None:
    """Print one Prometheus scrape (queue, worker and schedule gauges) and exit."""
    from ..observe.metrics import Metrics

    click.echo(Metrics(open_app()).exposition().decode(), nl=False)
