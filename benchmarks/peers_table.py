"""The side-by-side table of one results file, as Markdown (README.md, docs/performance.md).

``python -m benchmarks.peers_table benchmarks/results/<time>.json`` prints one row per
figure and one column per system, shiftwork first, then the peers fastest first, and a
row of ratios: the fastest peer against shiftwork's job in the same form. With a
``latency-rounds`` result, a second pickup row: every system sampled in interleaved rounds.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

NAMES = {"pgqueuer": "PgQueuer", "awa": "awa-pg", "chancy": "chancy",
         "oban": "oban (Oban for Python)", "procrastinate": "procrastinate", "dbos": "DBOS",
         "celery": "Celery / Redis"}


def _n(v: Any, digits: int = 0) -> str:
    return "-" if not isinstance(v, (int, float)) else f"{v:,.{digits}f}"


def _drain(r: dict[str, Any], key: str) -> float | None:
    got = r.get(key) or {}
    return got.get("jobs_per_s") if got.get("verified") else None


def table(results: dict[str, Any]) -> str:
    ours = results["ours"]["postgres"]
    peers = {k: v for k, v in results["peers"].items() if "error" not in v}
    order = sorted(peers, key=lambda p: -(_drain(peers[p], "drain-1w") or 0))
    heads = ["shiftwork (sync job)", "shiftwork (async job)"] + [
        f"{NAMES.get(p, p)} {peers[p].get('version', '')}".strip() for p in order]
    cols: list[dict[str, Any]] = [
        {"d1": _drain(ours, "drain-1w"), "d2": _drain(ours, "drain-2w"),
         "one": ours.get("enqueue", {}).get("one_by_one_per_s"),
         "bulk": ours.get("enqueue", {}).get("bulk_jobs_per_s"), "lat": ours.get("latency", {})},
        {"d1": _drain(ours, "drain-async-1w"), "d2": _drain(ours, "drain-async-2w"),
         "one": None, "bulk": None, "lat": {}},
    ] + [{"d1": _drain(peers[p], "drain-1w"), "d2": _drain(peers[p], "drain-2w"),
          "one": peers[p].get("enqueue", {}).get("one_by_one_per_s"),
          "bulk": peers[p].get("enqueue", {}).get("bulk_jobs_per_s"),
          "lat": peers[p].get("latency", {})} for p in order]

    # Every system's pickup from interleaved rounds (benchmarks/latency_rounds.py), if run.
    rounds = (results.get("latency_rounds") or {}).get("systems", {})
    for c, name in zip(cols, ["shiftwork", None, *order], strict=True):
        c["lat_rounds"] = rounds.get(name, {}) if name else {}

    def pickup(got: dict[str, Any]) -> str:
        return f"{got['p50']:.1f} / {got['p99']:.1f}" if "p50" in got else "-"

    lines = ["| figure | " + " | ".join(heads) + " |", "|---" * (len(heads) + 1) + "|"]
    rows: list[tuple[str, Callable[[Any], str]]] = [
        ("drain, 1 process (jobs/s)", lambda c: _n(c["d1"])),
        ("drain, 2 processes (jobs/s)", lambda c: _n(c["d2"])),
        ("enqueue one by one (calls/s)", lambda c: _n(c["one"])),
        ("enqueue bulk (jobs/s)", lambda c: _n(c["bulk"])),
        ("idle pickup p50 / p99 (ms)", lambda c: pickup(c["lat"]))]
    if rounds:
        rows.append(("idle pickup p50 / p99 (ms), interleaved rounds",
                     lambda c: pickup(c["lat_rounds"])))
    for label, cell in rows:
        lines.append(f"| {label} | " + " | ".join(cell(c) for c in cols) + " |")
    best = order[0] if order else None
    if best is not None:
        b1, b2 = _drain(peers[best], "drain-1w"), _drain(peers[best], "drain-2w")
        parts = []
        for label, c in (("sync", cols[0]), ("async", cols[1])):
            if b1 and b2 and c["d1"] and c["d2"]:
                parts.append(f"{label} {c['d1'] / b1:.2f}x / {c['d2'] / b2:.2f}x")
        lines.append("")
        lines.append(f"shiftwork against the fastest peer ({NAMES.get(best, best)}), 1 / 2 "
                     "processes: " + "; ".join(parts) + ".")
    return "\n".join(lines)


def main() -> None:
    with open(sys.argv[1]) as f:
        print(table(json.load(f)))


if __name__ == "__main__":
    main()
