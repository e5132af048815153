"""The pytest plugin as a user meets it: the sample project under tests/plugin_sample runs
in a pytest of its own (the plugin found by its entry point), on SQLite and PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import PG_DSN, require_pg

SAMPLE = Path(__file__).resolve().parent / "plugin_sample"


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_the_sample_project_passes_with_the_plugin(engine: str, tmp_path: Path) -> None:
    extra = []
    if engine == "postgres":
        require_pg()
        extra = ["-o", f"shiftwork_dsn={PG_DSN}"]
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir",
         str(SAMPLE), "-c", str(SAMPLE / "pytest.ini"), "--basetemp", str(tmp_path / "t"),
         *extra, str(SAMPLE)],
        capture_output=True, text=True, timeout=170, cwd=SAMPLE,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert out.returncode == 0, out.stdout + out.stderr
    assert "4 passed" in out.stdout
