"""What both sides share: the figures' sizes and how they print a result."""

from __future__ import annotations

import json
import os
import statistics
from typing import Any

PG = os.environ.get("SHIFTWORK_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/test")
STEPS = 10  # no-op steps per workflow in the throughput figure
CONCURRENCY = 10  # workflows at once per worker process, both systems


def emit(result: dict[str, Any]) -> None:
    print("result " + json.dumps(result), flush=True)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def rate(finished: list[float]) -> float:
    """Workflows finished per second, from the spread of their finish times (start-up of
    the worker processes excluded, the same way for both systems)."""
    finished = sorted(finished)
    if len(finished) < 2 or finished[-1] == finished[0]:
        return float("nan")
    return (len(finished) - 1) / (finished[-1] - finished[0])
