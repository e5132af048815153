"""The app the talk benchmark's worker process runs (``benchmarks.talk_app:app``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from shiftwork import App, Settings, Workflow

app = App(os.environ.get("BENCH_DSN", "sqlite:///bench.db"),
          schema=os.environ.get("BENCH_SCHEMA", "shiftwork"), settings=Settings(),
          auto_migrate=False)


def adder(total: int) -> Callable[[Any], int]:
    """The update handler: the count so far plus the update's number."""
    return lambda p: total + int(p)


@app.workflow(name="bench.counter", queue="talk")
def counter(wf: Workflow, n: int) -> int:
    """Takes ``n`` updates one after the other, publishing its count after each."""
    total = 0
    for i in range(n):
        total = wf.wait_for_update("add", adder(total), step=f"add-{i}")
        wf.set_state("total", total)
    return total
