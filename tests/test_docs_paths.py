"""Every file the docs name exists: a re-layout that moves a module must move its mentions."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "src" / "shiftwork"
#: `store/postgres/reconnect.py`, `worker/run.py`, `jobs.sql`, `tests/test_failover.py`
PATH = re.compile(r"(?<![\w./-])((?:[a-z_][a-z0-9_]*/)*[a-z_][a-z0-9_]*\.(?:py|sql))\b")
#: Where a path is ours: a folder of the package or of the repository. Other paths are a
#: user's (``orders/tasks.py``, ``signup.py`` in an example).
OURS = (*(f"{p.name}/" for p in PKG.iterdir() if p.is_dir()),
        "src/", "tests/", "benchmarks/", "examples/", "shiftwork/")
#: architecture.md is about our code only, so its bare file names are ours too.
BARE_OURS = {"architecture.md"}
NOT_OURS = {"manage.py", "myapp.py"}  # Django's, and the user's module in an example


def _exists(name: str) -> bool:
    if (PKG / name).exists() or (ROOT / name).exists():
        return True
    if "/" not in name:  # a bare file name: somewhere in the package
        return any(PKG.rglob(name))
    # a path inside a folder of the package: store/postgres/x.py, postgres/x.py
    return any(p.as_posix().endswith("/" + name) for p in PKG.rglob(Path(name).name))


def _docs() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("doc", _docs(), ids=lambda p: p.name)
def test_every_file_a_doc_names_exists(doc: Path) -> None:
    text = doc.read_text()
    named = {m for m in PATH.findall(text)
             if m.startswith(OURS) or ("/" not in m and doc.name in BARE_OURS)}
    missing = sorted(m for m in named - NOT_OURS
                     if not ((PKG.parent / m).exists() if m.startswith("shiftwork/")
                             else _exists(m)))
    assert not missing, f"{doc.name} names files that do not exist: {missing}"
