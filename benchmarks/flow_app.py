"""The app benchmarks/flow.py's worker processes run (``benchmarks.flow_app:app``)."""

from __future__ import annotations

import os

from shiftwork import App, Settings


def make_app(dsn: str, schema: str) -> App:
    a = App(dsn, schema=schema, settings=Settings(poll_interval=0.2), auto_migrate=False)
    a.queue("fair", fair=True)

    def noop(g: str) -> None:
        """A job that does nothing: the benchmark measures claiming, not work."""

    a.task(name="flow.plain", queue="plain", group_by="g", max_attempts=1)(noop)
    a.task(name="flow.fair", queue="fair", group_by="g", max_attempts=1)(noop)
    a.task(name="flow.limited", queue="limited", rate_limit="20/s", max_attempts=1)(noop)
    return a


app = make_app(os.environ.get("BENCH_DSN", "sqlite:///bench.db"),
               os.environ.get("BENCH_SCHEMA", "shiftwork"))
