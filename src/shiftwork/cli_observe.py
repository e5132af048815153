"""Visibility commands: ``health``, ``top``, ``metrics`` and ``dashboard``."""

from __future__ import annotations

import json
import secrets
import sys

import click

from .cli_target import app_argument, open_app, target_options


@click.command()
@app_argument
@target_options
@click.option("--max-wait", type=float, metavar="SECONDS",
              help="Threshold for queues that declare no max_wait of their own.")
@click.option("--no-worker-ok", is_flag=True, help="Do not fail when no worker is alive.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def health(max_wait: float | None, no_worker_ok: bool, as_json: bool) -> None:
    """Exit 0 when work is flowing; 1, saying why, when a queue is over its max_wait,
    a schedule is late or no worker is alive (2 on a usage or connection error)."""
    from .observe.health import check_health

    app = open_app()
    if max_wait is not None and max_wait <= 0:
        raise click.BadParameter("must be > 0 seconds", param_hint="--max-wait")
    report = check_health(app, default_max_wait=max_wait, require_worker=not no_worker_ok)
    if as_json:
        click.echo(json.dumps({
            "ok": report.ok, "workers_alive": report.workers_alive,
            "problems": [p.__dict__ for p in report.problems],
            "queues": [{"queue": s.queue, "waiting": s.available, "paused": s.paused,
                        "oldest_waiting_age": s.oldest_waiting_age} for s in report.queues],
        }, indent=2))
        sys.exit(0 if report.ok else 1)
    # A paused queue is not a failure, but a probe's reader must not take it for a live one.
    paused = [s.queue for s in report.queues if s.paused]
    note = f" (paused: {', '.join(paused)})" if paused else ""
    if report.ok:
        click.echo(f"ok: {len(report.queues)} queues within their thresholds{note}, "
                   f"{report.workers_alive} workers alive"
                   + (f", {len(report.schedules)} schedules on time" if report.schedules else ""))
    else:
        for problem in report.problems:
            click.echo(f"UNHEALTHY {problem.kind}: {problem.message}")
        if paused:
            click.echo(f"paused: {', '.join(paused)}")
    sys.exit(0 if report.ok else 1)


@click.command()
@app_argument
@target_options
@click.option("--interval", default=2.0, show_default=True, help="Seconds between refreshes.")
@click.option("--once", is_flag=True, help="Print one frame and exit.")
def top(interval: float, once: bool) -> None:
    """Queues, workers and throughput, refreshed in place (Ctrl-C to leave)."""
    from .observe.top import run_top

    run_top(open_app(), interval=interval, once=once)


@click.command()
@app_argument
@target_options
def metrics() -> None:
    """Print one Prometheus scrape (queue, worker and schedule gauges) and exit."""
    from .observe.metrics import Metrics

    click.echo(Metrics(open_app()).exposition().decode(), nl=False)


@click.command()
@app_argument
@target_options
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind; anything but loopback exposes it to the network.")
@click.option("--port", default=8181, show_default=True)
@click.option("--token", envvar="SHIFTWORK_DASHBOARD_TOKEN",
              help="Login token (or SHIFTWORK_DASHBOARD_TOKEN); a random one is made if unset.")
@click.option("--log-level", default="warning", show_default=True)
def dashboard(host: str, port: int, token: str | None, log_level: str) -> None:
    """Serve the web dashboard for APP (login with a token; see docs/observability.md)."""
    try:
        import uvicorn

        from .web import create_dashboard
    except ImportError as exc:
        from .errors import ConfigurationError

        raise ConfigurationError("the dashboard needs its extra: pip install 'shiftwork[web]' "
                                 f"({exc})") from exc
    from .cli import console

    app = open_app()
    made = token is None
    token = token or secrets.token_urlsafe(24)
    web = create_dashboard(app, token=token)
    shown = host if ":" not in host else f"[{host}]"
    console.print(f"shiftwork dashboard on http://{shown}:{port}/", highlight=False)
    if made:
        console.print(f"open http://{shown}:{port}/login?token={token} "
                      "(set --token or SHIFTWORK_DASHBOARD_TOKEN to choose it)", highlight=False)
    uvicorn.run(web, host=host, port=port, log_level=log_level.lower(),
                proxy_headers=False, server_header=False)


def register(group: click.Group) -> None:
    """Add the visibility commands to the ``shiftwork`` command group."""
    for command in (health, top, metrics, dashboard):
        group.add_command(command)
