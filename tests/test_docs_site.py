"""The docs site: ``mkdocs build --strict`` (broken links, bad anchors, missing pages and
API names fail), and every public name has a docstring for the API reference."""

from __future__ import annotations

import enum
import inspect
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import shiftwork
import shiftwork.core.control
import shiftwork.core.errors
import shiftwork.testing

ROOT = Path(__file__).resolve().parents[1]


def _mkdocs(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "-f", str(config), "-d", str(site)],
                          capture_output=True, text=True, timeout=170, cwd=config.parent,
                          env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"})


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    started = time.monotonic()
    out = _mkdocs(ROOT / "mkdocs.yml", tmp_path / "site")
    assert out.returncode == 0, out.stdout + out.stderr
    pages = {p.parent.name for p in (tmp_path / "site").rglob("index.html")}
    assert {"getting-started", "cli", "api", "deploy", "performance"} <= pages
    cli = (tmp_path / "site" / "cli" / "index.html").read_text()
    assert "shiftwork worker" in cli and "--grace" in cli  # generated from click
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    assert "enqueue_async" in api and "Register a function as a task" in api
    # The App is the public face: the services' plumbing is the Runtime's, not shown.
    plumbing = [name for name in ("claim_flow", "insert_rows", "insert_stream",
                                  "insert_graph", "enqueue_hooks", "leader_duties",
                                  "concurrency_limits", "ambient_transaction")
                if name in api]
    assert not plumbing, f"the API reference shows plumbing: {plumbing}"
    print(f"mkdocs build: {time.monotonic() - started:.1f}s")


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [the guide](nowhere.md).\n")
    config = tmp_path / "mkdocs.yml"
    config.write_text("site_name: t\nstrict: true\n")  # docs/ beside it
    out = _mkdocs(config, tmp_path / "site")
    assert out.returncode != 0 and "nowhere.md" in out.stdout + out.stderr


def _public(module: Any) -> list[tuple[str, Any]]:
    names = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
    return [(f"{module.__name__}.{n}", getattr(module, n)) for n in names]


def _undocumented() -> list[str]:
    missing: list[str] = []
    objects = [*_public(shiftwork), *_public(shiftwork.testing)]
    for mod in (shiftwork.core.errors, shiftwork.core.control):
        objects += [(f"{mod.__name__}.{n}", o) for n, o in vars(mod).items()
                    if inspect.isclass(o) and o.__module__ == mod.__name__]
    for name, obj in objects:
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        doc = obj.__doc__ or ""
        if not doc.strip() or doc.startswith(f"{obj.__name__}("):  # a dataclass's own
            missing.append(name)
        if not inspect.isclass(obj) or issubclass(obj, (enum.Enum, BaseException, tuple)):
            continue
        for attr, member in vars(obj).items():
            if attr.startswith("_"):
                continue
            func = member.fget if isinstance(member, property) else member
            if isinstance(func, (staticmethod, classmethod)):
                func = func.__func__
            if inspect.isfunction(func) and not (func.__doc__ or "").strip():
                missing.append(f"{name}.{attr}")
    return missing


def test_every_public_name_has_a_docstring() -> None:
    assert _undocumented() == []


if __name__ == "__main__":  # list what lacks a docstring
    print("\n".join(_undocumented()))
    pytest.main([__file__])
