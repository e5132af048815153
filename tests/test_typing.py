"""The package's types as its users see them: mypy --strict on tests/typing/expectations.py
must report exactly the errors that file marks (``# E: code``) and no other."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
CASES = HERE / "typing" / "expectations.py"


@pytest.mark.timeout(300)
def test_mypy_reports_exactly_the_marked_errors(tmp_path: Path) -> None:
    expected = {(n, m.group(1)) for n, line in enumerate(CASES.read_text().splitlines(), 1)
                if (m := re.search(r"# E: ([\w-]+)$", line))}
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir",
         str(tmp_path), "--config-file", "/dev/null", "--show-error-codes",
         "--hide-error-context", str(CASES)],
        capture_output=True, text=True, timeout=280, cwd=HERE)
    found = {(int(m.group(1)), m.group(2))
             for m in re.finditer(r"expectations\.py:(\d+): error: .*\[([\w-]+)\]$",
                                  out.stdout, re.M)}
    assert found == expected, out.stdout
    assert "error" in out.stdout  # mypy ran and found the marked ones (not a silent no-op)
