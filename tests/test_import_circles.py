"""No module of shiftwork imports, even for a type hint, a module that imports it back
(directly or through others): the layers stand on each other, never in a ring."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "shiftwork"


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(p for p in parts if p != "__init__")] = path
    return found


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """Every shiftwork module ``path`` imports, wherever the import is (a function's body,
    under TYPE_CHECKING): ``from a.b import c`` imports ``a.b``, and ``a.b.c`` when that
    is a module."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for name in names:
                while name and name not in modules:
                    name = name.rpartition(".")[0]
                if name and name != "shiftwork":
                    out.add(name)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in modules}
    return out


def test_no_module_imports_what_imports_it_back() -> None:
    modules = _modules()
    graph = {name: _imports(path, modules) - {name} for name, path in modules.items()}
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as exc:
        ring = exc.args[1]
        raise AssertionError("an import circle: " + " -> ".join(ring)) from None
