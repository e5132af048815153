"""The ``shiftwork`` command: the root group, its global options, and the commands under it.

Every command module defines its command or group on its own; this is the one place that
attaches them (``add_command``), so the modules below never import the root.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from ..errors import ShiftworkError
from ..redact import redact
from ..safetext import escape_controls
from .cron import cron
from .dashboard import dashboard
from .demo import demo
from .enqueue import enqueue
from .groups import groups
from .health import health
from .job_logs import jobs_logs
from .jobs import jobs
from .metrics import metrics
from .migrate import migrate
from .options import target_options
from .queues import queues
from .schedules import schedules
from .top import top
from .worker import worker
from .workflows import workflows


class ShiftworkGroup(click.Group):
    """The root group: a library error anywhere below ends as one line and exit code 2."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ShiftworkError as exc:
            click.echo(f"error: {escape_controls(redact(str(exc)), keep=chr(10))}", err=True)
            sys.exit(2)


@click.group(cls=ShiftworkGroup)
@click.version_option(package_name="shiftwork")
@target_options
def main() -> None:
    """shiftwork: background jobs and schedules on SQLite or PostgreSQL."""


for _command in (worker, migrate, enqueue, queues, jobs, groups, schedules, cron,
                 workflows, health, top, metrics, dashboard, demo):
    main.add_command(_command)
jobs.add_command(jobs_logs)  # `jobs logs` (cli/job_logs.py)
