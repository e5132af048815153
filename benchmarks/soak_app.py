"""The app of the soak benchmark (``benchmarks.soak_app:app``): one task per queue of the
mix, run by the workers, enqueued by the producer, read by ``shiftwork health``.

Env: BENCH_DSN, BENCH_SCHEMA, BENCH_MIX (see :func:`parse_mix`), BENCH_RETENTION
(seconds a finished job is kept: the pruner's deletes are part of the churn), BENCH_MAX_WAIT
(each queue's max_wait, so health fails once a backlog has waited that long)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from shiftwork import App, Settings

DEFAULT_MIX = "notify:60:0:10,media:30:5:0,reports:10:20:-5"


@dataclass(frozen=True)
class QueueSpec:
    """One queue of the mix: its share of the jobs, what a job costs, its priority."""

    name: str
    share: float  # fraction of all jobs, the shares summing to 1
    cost_ms: float  # each job sleeps this long (I/O-bound work: a call, a write)
    priority: int


def parse_mix(text: str) -> list[QueueSpec]:
    """``"notify:60:0:10,media:30:5"``: name:share:cost_ms[:priority], comma-separated;
    the shares are weights (normalized to 1)."""
    specs: list[tuple[str, float, float, int]] = []
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        parts = item.split(":")
        if len(parts) not in (3, 4):
            raise ValueError(f"queue mix item {item!r}: expected name:share:cost_ms[:priority]")
        try:
            share, cost = float(parts[1]), float(parts[2])
            priority = int(parts[3]) if len(parts) == 4 else 0
        except ValueError:
            raise ValueError(f"queue mix item {item!r}: share and cost_ms must be numbers, "
                             "priority an integer") from None
        if not parts[0] or share <= 0 or cost < 0:
            raise ValueError(f"queue mix item {item!r}: needs a name, a share > 0 and a "
                             "cost_ms >= 0")
        specs.append((parts[0], share, cost, priority))
    if not specs:
        raise ValueError("queue mix is empty: give at least one name:share:cost_ms")
    names = [s[0] for s in specs]
    if len(set(names)) != len(names):
        raise ValueError(f"queue mix names a queue twice: {text!r}")
    total = sum(s[1] for s in specs)
    return [QueueSpec(n, sh / total, c, p) for n, sh, c, p in specs]


def task_name(queue: str) -> str:
    return f"soak.{queue}"


def make_app(dsn: str, schema: str, mix: list[QueueSpec],
             retention: float = Settings().retention_finished, max_wait: float = 60.0) -> App:
    settings = Settings(retention_finished=retention)
    app = App(dsn, schema=schema, settings=settings, auto_migrate=False)
    for spec in mix:
        seconds = spec.cost_ms / 1000.0

        def work(seconds: float = seconds) -> None:
            if seconds:
                time.sleep(seconds)

        app.task(name=task_name(spec.name), queue=spec.name, priority=spec.priority,
                 max_attempts=1)(work)
        app.queue(spec.name, max_wait=max_wait)
    return app


app = make_app(os.environ.get("BENCH_DSN", "postgresql://postgres@127.0.0.1:5432/test"),
               os.environ.get("BENCH_SCHEMA", "shiftwork"),
               parse_mix(os.environ.get("BENCH_MIX", DEFAULT_MIX)),
               float(os.environ.get("BENCH_RETENTION", Settings().retention_finished)),
               float(os.environ.get("BENCH_MAX_WAIT", "60")))
