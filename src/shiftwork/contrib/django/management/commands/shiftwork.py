"""``manage.py shiftwork worker|migrate|jobs|...``: the ``shiftwork`` command line, on the
project's App (its settings, its database, its tasks)."""

from __future__ import annotations

import os
from typing import Any

from django.core.management.base import BaseCommand


class Command(BaseCommand):  # type: ignore[misc]
    help = ("shiftwork's command line on this project's App: manage.py shiftwork worker "
            "--queue default=10, manage.py shiftwork jobs list, ... (--help for all)")

    def run_from_argv(self, argv: list[str]) -> None:
        # Everything after "shiftwork" belongs to shiftwork's own parser (click).
        self.run_shiftwork(argv[2:], prog=f"{os.path.basename(argv[0])} shiftwork")

    def handle(self, *args: Any, **options: Any) -> None:  # call_command("shiftwork", ...)
        self.run_shiftwork(list(args), prog="shiftwork")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("args", nargs="*")

    @staticmethod
    def run_shiftwork(args: list[str], prog: str) -> None:
        from shiftwork.cli.root import main
        from shiftwork.contrib.django import get_app

        get_app()  # built, and every tasks module imported, before the command runs
        os.environ.setdefault("SHIFTWORK_APP", "shiftwork.contrib.django:app")
        try:
            main.main(args=args, prog_name=prog, standalone_mode=True)
        except SystemExit as exc:
            if exc.code not in (0, None):
                raise
