"""The benchmark command's options refuse bad input before anything runs (benchmarks/cli.py).
The runs themselves take many minutes and are not run here."""

from __future__ import annotations

import pytest
from benchmarks.cli import main
from click.testing import CliRunner


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
