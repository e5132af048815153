"""Issue 27 (first contact, second pass): what a newcomer meets in the first hour, through
the real commands (subprocesses on real SQLite files, the real Postgres server), the
examples through their documented commands in a temporary folder. Item 7 (the login page)
is pinned in the web tests."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def shiftwork(cwd: Path, *args: str, env: dict[str, str] | None = None,
              timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The real command in a subprocess, in an 80-column terminal."""
    return subprocess.run([sys.executable, "-m", "shiftwork.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "COLUMNS": "80",
                               "PYTHONPATH": f"{cwd}{os.pathsep}{ROOT / 'src'}",
                               **(env or {})})


# -- 1. an install line that works today -----------------------------------------------

def test_install_by_name_is_only_given_as_the_line_for_after_a_release() -> None:
    """Item 1: `pip install shiftwork` failed ("No matching distribution"): the package is
    not published. Each install by name must be said to be for after the first release;
    the lines that work today install the checkout (the built wheel and sdist are installed
    by tests/test_packaging.py)."""
    by_name = re.compile(r"pip install (?:-\S+ +)*'?shiftwork(?=[\[' `\n])")
    for page in DOCS:
        text = page.read_text()
        for match in by_name.finditer(text):
            around = text[max(0, match.start() - 200):match.end() + 60]
            assert "first release" in around, (
                f"{page.name}: {text[match.start():match.end() + 30]!r} is not said to be "
                "for after a release")
    getting_started = (ROOT / "docs" / "getting-started.md").read_text()
    assert "pip install '.[postgres]'" in getting_started
    assert "dist/shiftwork-0.1.0-py3-none-any.whl[postgres,web]" in getting_started
    version = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert version and f"shiftwork-{version[1]}-py3" in getting_started
