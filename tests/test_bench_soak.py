"""The soak benchmark's own parts (benchmarks/soak.py): its options refuse bad input with a
clear error, the summary reads a run right, and the chart is well-formed SVG. The run
itself takes minutes and is not run here."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest
from benchmarks import soak as soak_mod
from benchmarks.soak import Plan, chart, soak, summarize
from benchmarks.soak_app import DEFAULT_MIX, parse_mix
from click.testing import CliRunner

from .faults.pgcluster import ThrowawayCluster


def test_the_mix_is_parsed_and_normalized() -> None:
    mix = parse_mix("a:1:0,b:3:5:2")
    assert [(s.name, s.share, s.cost_ms, s.priority) for s in mix] == [
        ("a", 0.25, 0.0, 0), ("b", 0.75, 5.0, 2)]
    assert len(parse_mix(DEFAULT_MIX)) == 3


@pytest.mark.parametrize(("text", "says"), [
    ("", "empty"),
    ("a:1", "expected name:share:cost_ms"),
    ("a:x:1", "must be numbers"),
    ("a:0:1", "share > 0"),
    ("a:1:-1", "cost_ms >= 0"),
    ("a:1:1,a:2:2", "names a queue twice"),
])
def test_a_bad_mix_is_refused_naming_the_problem(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_mix(text)


@pytest.mark.parametrize(("args", "says"), [
    (["--rate", "0"], "--rate"),
    (["--minutes", "4", "--hold-at", "3", "--hold-minutes", "2"], "must lie within"),
    (["--history-minutes", "-1"], "--history-minutes"),
    (["--queues", "bad queue:1:1"], "bad queue name"),
    (["--queues", "a:1"], "expected name:share:cost_ms"),
    (["--label", "a/b"], "--label"),
])
def test_bad_options_are_refused_before_anything_starts(args: list[str], says: str) -> None:
    result = CliRunner().invoke(soak, args)
    assert result.exit_code == 2, result.output
    assert says in result.output


def test_a_server_with_autovacuum_off_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = ThrowawayCluster({"autovacuum": "off"})
    try:
        monkeypatch.setattr(soak_mod, "PG_DSN", cluster.dsn)
        result = CliRunner().invoke(soak, ["--minutes", "1", "--hold-at", "0",
                                           "--hold-minutes", "1"])
        assert result.exit_code == 2, result.output
        assert "autovacuum is off" in result.output and "--own-cluster" in result.output
        assert soak_mod.autovacuum_on(cluster.dsn) is False
    finally:
        cluster.close()


@pytest.mark.parametrize("own", [False, True])
def test_the_run_gets_a_place_of_its_own(own: bool) -> None:
    with soak_mod._target(own) as pl:
        if own:  # a cluster of its own, with Postgres's defaults
            assert pl.dsn != soak_mod.PG_DSN and soak_mod.autovacuum_on(pl.dsn)
        else:  # a fresh schema on the shared server
            assert pl.dsn == soak_mod.PG_DSN and pl.schema.startswith("bench_")


def _plan() -> Plan:
    # 6 minutes, the hold from minute 1 to 3, at 100 jobs/s
    return Plan(100, 6, 1, 2, 1, 1, parse_mix(DEFAULT_MIX), 60, 60, 1000, 0)


def _rows(plan: Plan) -> list[dict[str, Any]]:
    rows = []
    for k in range(1, 37):
        t = 10.0 * k
        during = 60 < t <= 180
        slow = during or 180 < t <= 220  # falls in the hold, back 40 s after it
        backlog = int(max(0, t - 60) * 10) if t <= 220 else 0
        rows.append({
            "elapsed_s": t, "phase": plan.phase(t), "throughput_per_s": 60.0 if slow else 100.0,
            "enqueue_per_s": 100.0, "producer_behind_s": 0.0, "pickup_p50_ms": 2.0,
            "pickup_p99_ms": 50.0 if slow else 8.0, "claim_scan_ms": 0.1,
            "claim_scan_buffers": 5, "dead_tuples": int(t * 100) if t <= 230 else 500,
            "live_tuples": 10_000, "vacuums": 1, "backlog": backlog, "xmin_age_xids": None,
            "xmin_age_s": None, "health": "warning" if 150 <= t <= 220 else "ok",
            "health_kinds": "xmin_horizon" if 150 <= t <= 220 else ""})
    return rows


def test_the_summary_reads_the_phases_the_recovery_and_the_first_warning() -> None:
    plan = _plan()
    s = summarize(_rows(plan), plan)
    assert (s["before"]["samples"], s["during"]["samples"], s["after"]["samples"]) == (6, 12, 18)
    assert s["before"]["throughput_per_s"] == 100 and s["during"]["throughput_per_s"] == 60
    assert s["before"]["p99_ms_median"] == 8 and s["during"]["p99_ms_max"] == 50
    assert s["dead_tuples_peak"] == 23_000 and s["dead_tuples_peak_at_s"] == 230
    assert s["throughput_fell"] is True
    assert s["throughput_back_s_after_hold"] == 50  # the first window at 95% of before: 230 s
    assert s["backlog_back_s_after_hold"] == 50
    assert s["health_first_not_ok"]["at_s"] == 150
    assert s["health_not_ok_s_after_hold_start"] == 90
    # 10 jobs a second pile up from 60 s: over 1,000 at 170 s
    assert s["backlog_crossed_threshold_at_s"] == 170
    assert s["health_not_ok_s_after_backlog_crossed"] == -20


def test_a_window_belongs_to_the_phase_of_its_middle() -> None:
    plan = _plan()
    assert [plan.phase(t) for t in (60.0, 60.2, 70.0, 180.0, 180.3, 190.0)] == [
        "before", "before", "during", "during", "during", "after"]


def test_the_chart_is_svg_with_the_hold_shaded() -> None:
    plan = _plan()
    svg = chart(_rows(plan), plan, "test")
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    assert root.tag == f"{ns}svg"
    lines = root.findall(f"{ns}polyline")
    assert len(lines) == 8  # finished, enqueued, p99, p50, dead, live, backlog, claim scan
    shaded = [r for r in root.findall(f"{ns}rect") if r.get("fill") == "#eeeeee"]
    assert len(shaded) == 5  # one per panel
    assert "transaction held 1-3 min" in svg
