"""Every named query of every engine is used: a ``-- name:`` block no Python code under
src/ names is dead SQL, kept in step with the schema for nothing."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from shiftwork.store.sqlfile import load_all_queries

SRC = Path(__file__).resolve().parent.parent / "src" / "shiftwork"
ENGINES = ["shiftwork.store.postgres", "shiftwork.store.sqlite"]


def _names_in_code() -> tuple[set[str], set[str]]:
    """Every string literal under src/, and every f-string's leading text (a query named
    ``f"jobs_filter_{field}"`` is used by the names that start so)."""
    literals: set[str] = set()
    prefixes: set[str] = set()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                literals.add(node.value)
            elif isinstance(node, ast.JoinedStr) and node.values:
                head = node.values[0]
                if isinstance(head, ast.Constant) and isinstance(head.value, str):
                    prefixes.add(head.value)
    return literals, prefixes


@pytest.mark.parametrize("engine", ENGINES)
def test_every_named_query_is_used(engine: str) -> None:
    literals, prefixes = _names_in_code()
    # (a prefix counts only if it is a name's stem: "jobs_page_", not "jobs" or "")
    stems = {p for p in prefixes if p.endswith("_") and p.count("_") >= 2}
    unused = sorted(name for name in load_all_queries(engine)
                    if name not in literals and not any(name.startswith(s) for s in stems))
    assert not unused, f"{engine}: named queries no code uses: {unused}"
