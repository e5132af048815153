"""``shiftwork dashboard``: serve the web dashboard, behind a login token."""

from __future__ import annotations

import contextlib
import secrets
import socket
from pathlib import Path

import click
from click.core import ParameterSource

from shiftwork.cli.options import app_argument, log_level_option, open_app, target_options


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
@click.option("--root-path", default="", metavar="PREFIX",
              help="Behind a reverse proxy that serves the dashboard under PREFIX (e.g. "
                   "/ops/jobs) and strips it: links, forms and redirects get it back.")
@click.option("--allowed-host", "allowed_hosts", multiple=True, metavar="HOST",
              help="A host name the dashboard answers to (repeat for more; *.example.com "
                   "matches subdomains); any other Host header gets 400. Default: any.")
@click.option("--public-health", is_flag=True,
              help="Answer GET /health without a login (for load balancers and probes): "
                   "only 'ok' (200) or 'not ok' (503), no details.")
@log_level_option("warning")
@click.pass_context
def dashboard(ctx: click.Context, host: str, port: int, token_file: Path | None,
              token: str | None, session_max_age: float | None, proxy_headers: bool,
              forwarded_allow_ips: str, root_path: str, allowed_hosts: tuple[str, ...],
              public_health: bool, log_level: str) -> None:
    """Serve the web dashboard for APP (login with a token; see docs/security.md)."""
    try:
        import uvicorn

        from shiftwork.web import create_dashboard
        from shiftwork.web.serve import server_config
        from shiftwork.web.sessions import DEFAULT_SESSION_MAX_AGE
    except ImportError as exc:
        from shiftwork.core.errors import ConfigurationError

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
                           session_max_age=session_max_age or DEFAULT_SESSION_MAX_AGE,
                           public_health=public_health,
                           allowed_hosts=list(allowed_hosts) or None)
    # Bound before the URL is printed: a busy port fails here, with nothing announced.
    sock = listen_socket(host, port)
    port = sock.getsockname()[1]
    shown = host if ":" not in host else f"[{host}]"
    # Never the token in a URL: it would stay in browser history and access logs.
    click.echo(f"shiftwork dashboard on http://{shown}:{port}/ : log in at "
               f"http://{shown}:{port}/login with the token"
               + ("" if not made else " below (made for this run; choose one with "
                                      "--token-file or SHIFTWORK_DASHBOARD_TOKEN)"), err=True)
    if made:
        click.echo(token, err=True)
    # Ctrl-C stops it, exit 0 (as uvicorn.run), also when it comes before the server
    # has installed its own handlers.
    with contextlib.suppress(KeyboardInterrupt):
        uvicorn.Server(server_config(web, host=host, port=port, proxy_headers=proxy_headers,
                                     forwarded_allow_ips=forwarded_allow_ips,
                                     root_path=root_path, log_level=log_level)
                       ).run(sockets=[sock])


def listen_socket(host: str, port: int) -> socket.socket:
    """The dashboard's listening socket, or a ConfigurationError naming the address."""
    from shiftwork.core.errors import ConfigurationError

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn: TIME_WAIT is fine
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigurationError(
            f"cannot serve the dashboard on {host}:{port}: {exc.strerror or exc} "
            "(another dashboard or program has it? choose another --port)") from None
    sock.set_inheritable(True)
    return sock


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
