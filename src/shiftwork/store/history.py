"""Engine-neutral parts of the history rollup's storage: the figures of one bucket as
the engines' queries return them, and the percentiles read from ranked rows."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

#: Finished counts of one queue or task in a bucket: succeeded, retried, dead, cancelled.
Counts = tuple[int, int, int, int]


class Durations(NamedTuple):
    """Run time of the jobs one queue or task finished in a bucket (seconds)."""

    runs: int
    p50: float
    p95: float


def percentiles(rows: Iterable[Any]) -> dict[tuple[str, str], Durations]:
    """``history_durations`` rows (queue, task, total, rank, duration) as p50/p95 per
    (queue, task): the nearest rank, ceil(p * total), which the query already picked."""
    ranks: dict[tuple[str, str], tuple[int, dict[int, float]]] = {}
    for queue, task, total, n, d in rows:
        ranks.setdefault((queue, task), (int(total), {}))[1][int(n)] = max(float(d), 0.0)
    out = {}
    for key, (total, at) in ranks.items():
        out[key] = Durations(total, at[(total * 50 + 99) // 100], at[(total * 95 + 99) // 100])
    return out
