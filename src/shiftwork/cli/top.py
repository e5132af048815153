"""``shiftwork top``: queues, workers and throughput, refreshed in place."""

from __future__ import annotations

import signal

import click

from shiftwork.cli.options import app_argument, interval_option, open_app, target_options


@click.command()
@app_argument
@target_options
@interval_option(2.0, "Seconds between refreshes.")
@click.option("--once", is_flag=True, help="Print one frame and exit.")
def top(interval: float, once: bool) -> None:
    """Queues, workers and throughput, refreshed in place (Ctrl-C to leave)."""
    from shiftwork.observe.top import run_top

    # Ctrl-C (SIGINT) stops it even when it was started with SIGINT ignored, as a shell
    # without job control does to `cmd &` (and hands down to children): the worker and
    # the dashboard install their own handlers, top relies on KeyboardInterrupt.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    run_top(open_app(), interval=interval, once=once)
