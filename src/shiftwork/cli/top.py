"""``shiftwork top``: queues, workers and throughput, refreshed in place."""

from __future__ import annotations

import click

from .options import app_argument, interval_option, open_app, target_options


@click.command()
@app_argument
@target_options
@interval_option(2.0, "Seconds between refreshes.")
@click.option("--once", is_flag=True, help="Print one frame and exit.")
def top(interval: float, once: bool) -> None:
    """Queues, workers and throughput, refreshed in place (Ctrl-C to leave)."""
    from ..observe.top import run_top

    run_top(open_app(), interval=interval, once=once)
