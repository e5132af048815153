"""The ``shiftwork`` command: the root group, its global options, and the commands under it.

Every command module defines its command or group on its own; this is the one place that
attaches them (``add_command``), so the modules below never import the root.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from shiftwork.cli.cron import cron
from shiftwork.cli.dashboard import dashboard
from shiftwork.cli.demo import demo
from shiftwork.cli.enqueue import enqueue
from shiftwork.cli.groups import groups
from shiftwork.cli.health import health
from shiftwork.cli.job_logs import jobs_logs
from shiftwork.cli.jobs import jobs
from shiftwork.cli.metrics import metrics
from shiftwork.cli.migrate import migrate
from shiftwork.cli.options import target_options
from shiftwork.cli.queues import queues
from shiftwork.cli.reencrypt import jobs_reencrypt
from shiftwork.cli.schedules import schedules
from shiftwork.cli.top import top
from shiftwork.cli.worker import worker
from shiftwork.cli.workflows import workflows
from shiftwork.core.errors import ShiftworkError
from shiftwork.core.redact import redact
from shiftwork.core.safetext import escape_controls


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
jobs.add_command(jobs_reencrypt)  # `jobs reencrypt` (cli/reencrypt.py)
