"""The app the memory-ceiling benchmark's job children import (``benchmarks.memory_app:app``).

Env: BENCH_DSN (a SQLite file by default)."""

from __future__ import annotations

import os

from shiftwork import App

app = App(os.environ.get("BENCH_DSN", "sqlite:///bench-memory.db"))


@app.task(name="mem.thread", queue="threads", max_attempts=1)
def on_thread() -> None:
    """No ceiling, a thread queue: what a job costs without a child."""


@app.task(name="mem.process", queue="children", max_attempts=1)
def in_process() -> None:
    """No ceiling, but run in a ``:process`` queue: the child's start alone."""


@app.task(name="mem.limited", queue="limited", max_attempts=1, memory_limit="512MB")
def limited() -> None:
    """A ceiling: a child with its rlimit, watched by its parent."""
