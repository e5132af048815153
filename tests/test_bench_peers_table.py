"""The side-by-side table of a results file (benchmarks/peers_table.py): one column per
system, the peers fastest first, the ratios against the fastest, and the pickup from the
interleaved rounds (benchmarks/latency_rounds.py) in a row of its own. The runs themselves
take many minutes and are not run here."""

from __future__ import annotations

from typing import Any

from benchmarks.peers_table import table


def _drain(rate: float) -> dict[str, Any]:
    return {"jobs_per_s": rate, "verified": True}


def _results(rounds: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "ours": {"postgres": {
            "drain-1w": _drain(24_000), "drain-2w": _drain(30_000),
            "drain-async-1w": _drain(22_000), "drain-async-2w": _drain(28_000),
            "enqueue": {"one_by_one_per_s": 2_500, "bulk_jobs_per_s": 200_000},
            "latency": {"p50": 2.6, "p99": 4.7}}},
        "peers": {
            "celery": {"version": "5.7.0", "drain-1w": _drain(1_500), "drain-2w": _drain(2_000),
                       "latency": {"p50": 2.0, "p99": 2.9}},
            "pgqueuer": {"version": "1.6.0", "drain-1w": _drain(12_000),
                         "drain-2w": _drain(15_000), "latency": {"p50": 4.2, "p99": 10.7}},
            "oban": {"error": "no peer Python"}}}
    if rounds:
        out["latency_rounds"] = {"systems": {
            "shiftwork": {"p50": 2.3, "p99": 3.4}, "pgqueuer": {"p50": 4.4, "p99": 6.7},
            "celery": {"p50": 2.1, "p99": 2.6}}}
    return out


def test_columns_ratios_and_the_interleaved_pickup_row() -> None:
    text = table(_results(rounds=True))
    head, _, *rows = text.splitlines()
    assert head.split(" | ")[1:5] == ["shiftwork (sync job)", "shiftwork (async job)",
                                      "PgQueuer 1.6.0", "Celery / Redis 5.7.0 |"]
    assert "oban" not in text  # a peer that failed to run has no column
    pickup = [r for r in rows if r.startswith("| idle pickup")]
    assert pickup == ["| idle pickup p50 / p99 (ms) | 2.6 / 4.7 | - | 4.2 / 10.7 | 2.0 / 2.9 |",
                      "| idle pickup p50 / p99 (ms), interleaved rounds | 2.3 / 3.4 | - | "
                      "4.4 / 6.7 | 2.1 / 2.6 |"]
    assert text.endswith("(PgQueuer), 1 / 2 processes: sync 2.00x / 2.00x; "
                         "async 1.83x / 1.87x.")


def test_without_rounds_there_is_one_pickup_row() -> None:
    rows = table(_results(rounds=False)).splitlines()
    assert [r.split(" | ")[0] for r in rows if "pickup" in r] == ["| idle pickup p50 / p99 (ms)"]
