"""Visibility commands: ``health``, ``top``, ``metrics`` and ``dashboard``."""

from __future__ import annotations

import contextlib
import json
import secrets
import sys
from pathlib import Path

import click
from click.core import ParameterSource

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
@click.option("--token-file", type=click.Path(dir_okay=False, path_type=Path),
              help="Read the login token from this file (or set SHIFTWORK_DASHBOARD_TOKEN); "
                   "a random one is made if neither is given.")
@click.option("--token", envvar="SHIFTWORK_DASHBOARD_TOKEN", show_envvar=True,
              help="Login token. On the command line it shows in `ps`: prefer --token-file "
                   "or the environment variable.")
@click.option("--session-max-age", type=float, metavar="SECONDS",
              help="How long a login lasts [default: 28800, a working day].")
@click.option("--proxy-headers", is_flag=True,
              help="Behind a reverse proxy: take the scheme and client address from "
                   "X-Forwarded-Proto / X-Forwarded-For sent by --forwarded-allow-ips.")
@click.option("--forwarded-allow-ips", default="127.0.0.1", show_default=True,
              metavar="ADDRESSES", help="Comma-separated proxy addresses or networks whose "
                                        "X-Forwarded-* headers are trusted (with --proxy-headers).")
@click.option("--log-level", default="warning", show_default=True)
@click.pass_context
def dashboard(ctx: click.Context, host: str, port: int, token_file: Path | None,
              token: str | None, session_max_age: float | None, proxy_headers: bool,
              forwarded_allow_ips: str, log_level: str) -> None:
    """Serve the web dashboard for APP (login with a token; see docs/security.md)."""
    try:
        import uvicorn

        from .web import create_dashboard
        from .web.serve import server_config
        from .web.sessions import DEFAULT_SESSION_MAX_AGE
    except ImportError as exc:
        from .errors import ConfigurationError

        raise ConfigurationError("the dashboard needs its extra: pip install 'shiftwork[web]' "
                                 f"({exc})") from exc
    if token_file is not None:
        if token is not None:
            raise click.UsageError("give --token-file or --token/SHIFTWORK_DASHBOARD_TOKEN, "
                                   "not both")
        token = _read_token(token_file)
    elif ctx.get_parameter_source("token") is ParameterSource.COMMANDLINE:
        click.echo("warning: --token is visible to other users in `ps`; use "
                   "--token-file or SHIFTWORK_DASHBOARD_TOKEN", err=True)
    app = open_app()
    made = token is None
    token = token or secrets.token_urlsafe(24)
    web = create_dashboard(app, token=token,
                           session_max_age=session_max_age or DEFAULT_SESSION_MAX_AGE)
    shown = host if ":" not in host else f"[{host}]"
    # Never the token in a URL: it would stay in browser history and access logs.
    click.echo(f"shiftwork dashboard on http://{shown}:{port}/ : log in at "
               f"http://{shown}:{port}/login with the token"
               + ("" if not made else " below (made for this run; choose one with "
                                      "--token-file or SHIFTWORK_DASHBOARD_TOKEN)"), err=True)
    if made:
        click.echo(token, err=True)
    server = uvicorn.Server(server_config(web, host=host, port=port,
                                          proxy_headers=proxy_headers,
                                          forwarded_allow_ips=forwarded_allow_ips,
                                          log_level=log_level))
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C stops it: exit 0, as uvicorn.run
        server.run()


def _read_token(path: Path) -> str:
    try:
        token = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise click.BadParameter(f"cannot read {path}: {exc}", param_hint="--token-file"
                                 ) from None
    if not token:
        raise click.BadParameter(f"{path} is empty", param_hint="--token-file")
    if path.stat().st_mode & 0o077:
        click.echo(f"warning: {path} is readable by other users (chmod 600 it)", err=True)
    return token


def register(group: click.Group) -> None:
    """Add the visibility commands to the ``shiftwork`` command group."""
    for command in (health, top, metrics, dashboard):
        group.add_command(command)
