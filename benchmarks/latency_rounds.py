"""Idle pickup of every system in interleaved rounds: the ``latency-rounds`` workload.

One latency run per system takes 10-20 s, and in a full run the systems' runs are minutes
apart. On a shared host the floor moves by more than the systems differ: a bare round trip
measured 0.07 ms at one moment and 0.30-0.42 ms half an hour later (a durable INSERT
0.28 -> 0.69-0.81 ms), so a latency measured at a quiet moment beat one measured at a
noisy one whatever the systems did. Here every system runs ``count / rounds`` sends in each
round, the order rotated from round to round, and its samples are pooled: each system is
sampled across the same stretch of machine states. Each round of shiftwork's also records
the machine's floor (a bare round trip and a bare durable INSERT at the same pace).

A round's first pickup is dropped, for every system alike: a worker just started may still
be opening what its first job needs (a peer's first sample reached 50-80 ms), and pooled
over five rounds those five would be the p99. Each round sends one more to make up for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import ours
from .common import percentiles, settle
from .peers import run_peer

Progress = Callable[[float, str], None]


def latency_rounds(peers: list[str], peer_python: str, count: int, rounds: int,
                   progress: Progress) -> dict[str, Any]:
    systems = ["shiftwork", *peers]
    per = max(1, count // rounds)
    samples: dict[str, list[float]] = {s: [] for s in systems}
    errors: dict[str, str] = {}
    floors: list[dict[str, float]] = []
    orders: list[list[str]] = []
    steps, done = rounds * len(systems), 0
    for r in range(rounds):
        k = r % len(systems)
        order = systems[k:] + systems[:k]  # nobody always runs first, or after the same one
        orders.append(order)
        for system in order:
            progress(done / steps, f"round {r + 1}/{rounds}: {system}")
            settle(1.0)
            if system == "shiftwork":
                got = ours.latency("postgres", per + 1, lambda *_: None)
                floors.append(got["floor"])
            else:
                out = run_peer(system, peer_python, 0, 0, 0, 0, per + 1, lambda *_: None,
                               workloads="latency")
                got = out.get("latency", out)
            if "error" in got:
                errors[system] = str(got["error"])
            samples[system] += got.get("samples", [])[1:]  # the first: see above
            done += 1
    return {"rounds": rounds, "per_round": per, "orders": orders, "floors": floors,
            "errors": errors,
            "systems": {s: percentiles(v) for s, v in samples.items() if v}}
