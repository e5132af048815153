"""The benchmark command's options refuse bad input before anything runs (benchmarks/cli.py).
The runs themselves take many minutes and are not run here (tests/test_benchmarks_run.py
runs each at a size of seconds)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from benchmarks.cli import main
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("rounds", ["0", "-3", "many"])
def test_rounds_must_be_a_whole_number_of_at_least_one(rounds: str) -> None:
    out = CliRunner().invoke(main, ["run", "--workload", "latency-rounds", "--rounds", rounds])
    assert out.exit_code == 2
    assert "Invalid value for '--rounds'" in out.output


def test_an_unknown_workload_is_named() -> None:
    out = CliRunner().invoke(main, ["run", "--workload", "latency-round"])
    assert out.exit_code == 2
    assert "unknown workload ['latency-round']" in out.output
    assert "latency-rounds" in out.output  # the choices, the new one among them


def test_a_results_dir_that_is_a_file_is_refused(tmp_path: Path) -> None:
    taken = tmp_path / "taken"
    taken.write_text("")
    out = CliRunner().invoke(main, ["run", "--results-dir", str(taken)])
    assert out.exit_code == 2
    assert "Invalid value for '--results-dir'" in out.output


@pytest.mark.parametrize("seconds", ["0", "-1", "soon"])
def test_the_fleets_idle_window_must_be_positive_seconds(seconds: str) -> None:
    from benchmarks.fleet import main as fleet

    out = CliRunner().invoke(fleet, ["--idle-seconds", seconds])
    assert out.exit_code == 2  # refused before a cluster is made
    assert "Invalid value for '--idle-seconds'" in out.output


@pytest.mark.parametrize(("args", "says"), [
    (["--engines", "sqlite,mysql"], "unknown engine 'mysql'"),
    (["--lease", "0"], "--lease must be > 0 seconds"),
])
def test_orphans_refuses_bad_options_before_any_run(args: list[str], says: str) -> None:
    run = subprocess.run([sys.executable, "-m", "benchmarks.orphans", *args], cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"},
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and says in run.stderr, run.stderr
    assert run.stdout == ""  # no engine ran
