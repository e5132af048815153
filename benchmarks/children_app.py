"""The app the children benchmark's worker process runs (``benchmarks.children_app:app``)."""

from __future__ import annotations

import os
import time

from shiftwork import App, Settings, Workflow

app = App(os.environ.get("BENCH_DSN", "sqlite:///bench.db"),
          schema=os.environ.get("BENCH_SCHEMA", "shiftwork"), settings=Settings(),
          auto_migrate=False)


@app.task(name="bench.leaf", queue="fan", max_attempts=1)
def leaf(i: int, ms: float = 0) -> int:
    if ms:
        time.sleep(ms / 1000)  # a member that does some work: reports arrive spread out
    return i


@app.workflow(name="bench.fan", queue="fan")
def fan(wf: Workflow, n: int, ms: float = 0) -> int:
    """Fan-out/fan-in through wf.parallel: n calls (of ``ms`` each), joined."""
    out = wf.parallel(*(wf.call(f"c{i}", leaf, i, ms) for i in range(n)))
    return len(out)


@app.workflow(name="bench.fan_apart", queue="parents")
def fan_apart(wf: Workflow, n: int, ms: float = 0) -> int:
    """The same with the parent in a queue of its own: a free slot is always there to
    replay it, so every wake-up it gets costs a run."""
    out = wf.parallel(*(wf.call(f"c{i}", leaf, i, ms) for i in range(n)))
    return len(out)


@app.workflow(name="bench.kid", queue="fan")
def kid(wf: Workflow) -> int:
    return 1


@app.workflow(name="bench.parent", queue="fan")
def parent(wf: Workflow) -> int:
    """One child workflow, awaited: enqueue, child run, report, parent wake, finish."""
    return int(wf.child(kid))


@app.workflow(name="bench.single", queue="fan")
def single(wf: Workflow) -> int:
    """The baseline of `parent`: the same work as one step of one workflow."""
    return int(wf.step("one", lambda: 1))
