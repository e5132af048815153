"""The command line's shared options: one definition of each option used in more than one place.

Which database a command works on: ``--app`` / ``--dsn`` / ``--schema``, one set of options.
Every command and group of ``shiftwork`` carries the same three options (``target_options``),
so they are accepted wherever click allows them: ``shiftwork --app X schedules next N``,
``shiftwork schedules --app X next N`` and ``shiftwork schedules next N --app X`` are the
same command. The options expose no parameter: their callbacks record the values in the
click context's ``meta``, which the whole chain of contexts shares, and ``open_app()``
reads them from there.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.core import ParameterSource

from shiftwork.core.bounds import MAX_LIST
from shiftwork.core.redact import redact

if TYPE_CHECKING:
    from shiftwork.app import App

F = TypeVar("F", bound=Callable[..., Any])

ENV = {"app_spec": "SHIFTWORK_APP", "dsn": "SHIFTWORK_DSN", "schema": "SHIFTWORK_SCHEMA"}
DEFAULT_SCHEMA = "shiftwork"
_META_KEY = "shiftwork.target"


@dataclass
class Target:
    """The values given on the command line (any level); the environment fills the rest."""

    given: dict[str, str] = field(default_factory=dict)

    def resolve(self) -> tuple[str | None, str | None, str]:
        """``(app_spec, dsn, schema)``: command-line values first, else the environment.

        A command line naming a database (``--app`` or ``--dsn``) ignores the environment's
        choice, so ``SHIFTWORK_APP`` in the shell never overrides a ``--dsn`` typed now.
        """
        given = self.given
        if given.get("app_spec") and given.get("dsn"):
            raise click.UsageError("give --app or --dsn, not both (the app names its database)")
        if given.get("app_spec") or given.get("dsn"):
            spec, dsn = given.get("app_spec"), given.get("dsn")
            if dsn and redact(dsn) != dsn:
                click.echo("warning: a password in --dsn is visible to other users in `ps`; "
                           "set SHIFTWORK_DSN, or leave it out for PGPASSWORD / ~/.pgpass",
                           err=True)
        else:
            spec = os.environ.get(ENV["app_spec"]) or None
            dsn = None if spec else os.environ.get(ENV["dsn"]) or None
        schema = given.get("schema") or os.environ.get(ENV["schema"]) or DEFAULT_SCHEMA
        if spec and given.get("schema"):
            raise click.UsageError("--schema goes with --dsn; with --app the App names its "
                                   "schema (App(..., schema=...))")
        return spec, dsn, schema


def current_target(ctx: click.Context | None = None) -> Target:
    ctx = ctx or click.get_current_context()
    target: Target | None = ctx.meta.get(_META_KEY)
    if target is None:
        target = ctx.meta[_META_KEY] = Target()
    return target


def _remember(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is None or param.name is None:
        return
    if ctx.get_parameter_source(param.name) is not ParameterSource.COMMANDLINE:
        return
    key = "app_spec" if param.name == "app_arg" else param.name
    given = current_target(ctx).given
    if key == "app_spec" and given.get("app_spec") not in (None, value):
        raise click.UsageError(f"two apps given: {given['app_spec']} and {value}")
    given[key] = value


def _target_options(fn: F, *, database_shown: bool) -> F:
    for option in reversed((
        click.option("--app", "app_spec", metavar="MODULE:ATTR", expose_value=False,
                     callback=_remember,
                     help="Your App, e.g. myproject.jobs:app (or SHIFTWORK_APP)."),
        click.option("--dsn", metavar="DSN", expose_value=False, callback=_remember,
                     hidden=not database_shown,
                     help="Database instead of --app, e.g. sqlite:///jobs.db (or SHIFTWORK_DSN)."),
        click.option("--schema", metavar="NAME", expose_value=False, callback=_remember,
                     hidden=not database_shown,
                     help=f"PostgreSQL schema, with --dsn (or SHIFTWORK_SCHEMA; default "
                          f"{DEFAULT_SCHEMA})."),
    )):
        fn = option(fn)
    return fn


def target_options(fn: F) -> F:
    """Add ``--app``, ``--dsn`` and ``--schema`` to a command or group (read by open_app)."""
    return _target_options(fn, database_shown=True)


def code_target_options(fn: F) -> F:
    """The same options for a command that needs the application's code (``enqueue``,
    ``worker``: ``open_app(need_app=...)``): its help lists ``--app`` only, since a
    ``--dsn`` there is refused (still accepted, so the refusal can say why)."""
    return _target_options(fn, database_shown=False)


def app_argument(fn: F) -> F:
    """An optional positional ``MODULE:ATTR``, the same as ``--app`` (``top myapp:app``)."""
    return click.argument("app_arg", metavar="[MODULE:ATTR]", required=False,
                          expose_value=False, callback=_remember)(fn)


def open_app(*, need_app: str | None = None) -> App:
    """The App the command line (or the environment) names.

    ``need_app``: why this command needs the application's code (its tasks), so that a
    bare ``--dsn`` is refused with that reason instead of failing later.
    """
    from shiftwork.app import App
    from shiftwork.worker.loader import load_app

    spec, dsn, schema = current_target().resolve()
    if spec:
        app = load_app(spec)
    elif need_app:
        raise click.UsageError(f"{need_app}: give --app MODULE:ATTR (or SHIFTWORK_APP)")
    elif not dsn:
        raise click.UsageError("give --app MODULE:ATTR or --dsn DSN (or SHIFTWORK_APP / "
                               "SHIFTWORK_DSN)")
    else:
        app = App(dsn, schema=schema)
    # The header: which database, its SQLite path resolved. On stderr, so JSON and
    # scrapes on stdout stay clean.
    click.echo(f"shiftwork: {app.describe_database()}", err=True)
    return app


# Options and arguments that several commands share. Each takes the help text of the command
# using it (the same flag reads differently under `health` and under `cron`).

def json_flag(help: str | None = None) -> Callable[[F], F]:
    """``--json``: print the command's result as JSON instead of a table or text."""
    return click.option("--json", "as_json", is_flag=True, help=help)


def limit_option(default: int) -> Callable[[F], F]:
    """``--limit``: at most this many rows."""
    return click.option("--limit", default=default, show_default=True,
                        type=click.IntRange(0, MAX_LIST))


def count_option(default: int, help: str) -> Callable[[F], F]:
    """``-n``: how many (fire instants) to print."""
    return click.option("-n", "count", default=default, show_default=True, help=help)


def after_option(help: str) -> Callable[[F], F]:
    """``--after``: an ISO 8601 instant, read with :func:`parse_instant`."""
    return click.option("--after", help=help)


def interval_option(default: float, help: str) -> Callable[[F], F]:
    """``--interval``: seconds between two reads of the database."""
    return click.option("--interval", default=default, show_default=True, help=help)


def log_level_option(default: str) -> Callable[[F], F]:
    """``--log-level``: a logging level name."""
    return click.option("--log-level", default=default, show_default=True)


def queue_option(fn: F) -> F:
    """``--queue``: a queue name."""
    return click.option("--queue")(fn)


def job_id_argument(fn: F) -> F:
    """``JOB_ID``: one job's id."""
    return click.argument("job_id", type=int)(fn)


def job_ids_argument(fn: F) -> F:
    """``JOB_IDS...``: one or more job ids."""
    return click.argument("job_ids", type=int, nargs=-1, required=True)(fn)


def workflow_id_argument(fn: F) -> F:
    """``WORKFLOW_ID``: a workflow's id (the id of its job)."""
    return click.argument("workflow_id", type=int)(fn)


def name_argument(fn: F) -> F:
    """``NAME``: the name of the queue or schedule the command acts on."""
    return click.argument("name")(fn)


def schedule_argument(fn: F) -> F:
    """``NAME``: a schedule, by its name or by its id (``~...``, as ``shiftwork schedules``
    shows it for a name that cannot be typed or put in a URL)."""
    from shiftwork.core.errors import ConfigurationError
    from shiftwork.core.names import schedule_name

    def to_name(ctx: click.Context, param: click.Parameter, value: str) -> str:
        try:
            return schedule_name(value)
        except ConfigurationError as exc:
            raise click.BadParameter(str(exc)) from None

    return click.argument("name", callback=to_name)(fn)


def parse_instant(text: str, what: str) -> datetime:
    """ISO 8601 with an offset or ``Z``; a bare date or time without a zone is refused.

    Read in the command, not as a click type: a schedule's name is checked first, and the
    message keeps its ``Invalid value for --after`` form.
    """
    try:
        t = datetime.fromisoformat(text.replace("z", "Z").replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(f"{text!r} is not an ISO 8601 instant, e.g. "
                                 "2025-03-08T12:00:00Z", param_hint=what) from None
    if t.tzinfo is None:
        raise click.BadParameter(f"{text!r} has no time zone; add Z or an offset such as "
                                 "+01:00", param_hint=what)
    return t.astimezone(UTC)
