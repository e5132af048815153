"""The package as a user gets it: build the wheel and sdist, install the wheel into a clean
virtualenv (no psycopg), run the demo from it, and look at what the wheel holds.

Slow-ish (a build and a pip install): marked ``packaging``; deselect locally with
``-m 'not packaging'``. CI runs it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "shiftwork"

pytestmark = [pytest.mark.packaging, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(out),
                    str(ROOT)], check=True, capture_output=True, timeout=600)
    return out


def _one(dist: Path, pattern: str) -> Path:
    found = sorted(dist.glob(pattern))
    assert len(found) == 1, found
    return found[0]


def _source_files() -> set[str]:
    """What the wheel must hold: every file of the package but bytecode."""
    return {f"shiftwork/{p.relative_to(PACKAGE).as_posix()}" for p in PACKAGE.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}


def test_wheel_holds_the_package_and_nothing_else(dist: Path) -> None:
    wheel = _one(dist, "shiftwork-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    package = {n for n in names if not n.startswith("shiftwork-")}
    assert package == _source_files()
    # The SQL, the templates, the static files and the typing marker are package data.
    for needed in ("shiftwork/py.typed", "shiftwork/store/sqlite/jobs.sql",
                   "shiftwork/store/postgres/migrations/0001_core.sql",
                   "shiftwork/web/templates/base.html", "shiftwork/web/static/style.css",
                   # Django finds these by path: its migration and its manage.py command.
                   "shiftwork/contrib/django/migrations/0001_shiftwork_tables.py",
                   "shiftwork/contrib/django/management/commands/shiftwork.py"):
        assert needed in names
    meta = {n.split("/", 1)[1] for n in names if n.startswith("shiftwork-")}
    assert {"METADATA", "WHEEL", "RECORD", "entry_points.txt", "licenses/LICENSE"} <= meta
    metadata = zipfile.ZipFile(wheel).read(
        next(n for n in names if n.endswith("/METADATA"))).decode()
    assert "License-Expression: Apache-2.0" in metadata
    assert "Requires-Python: >=3.11" in metadata
    for extra in ("postgres", "web", "otel", "sqlalchemy", "django", "sentry"):
        assert f"Provides-Extra: {extra}" in metadata
    # SQLite users get no PostgreSQL driver: psycopg is only behind an extra.
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    assert all("extra ==" in line for line in requires
               if any(d in line.lower() for d in ("psycopg", "django", "sqlalchemy", "sentry",
                                                  "opentelemetry")))
    entry_points = zipfile.ZipFile(wheel).read(
        next(n for n in names if n.endswith("/entry_points.txt"))).decode()
    assert "shiftwork = shiftwork.testing.pytest_plugin" in entry_points


def test_sdist_holds_the_sources_license_and_changelog(dist: Path) -> None:
    sdist = _one(dist, "shiftwork-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    for needed in ("LICENSE", "CHANGELOG.md", "README.md", "pyproject.toml",
                   "src/shiftwork/__init__.py", "src/shiftwork/py.typed",
                   # the alert rules and dashboard the docs and tests name
                   "deploy/prometheus/shiftwork-rules.yml",
                   "deploy/prometheus/shiftwork-rules.test.yml",
                   "deploy/grafana/shiftwork-dashboard.json"):
        assert needed in names
    assert not any(n.startswith((".venv", ".git/", "dist/")) or "__pycache__" in n
                   for n in names)


def test_the_wheel_installs_alone_and_runs_the_demo(dist: Path, tmp_path: Path) -> None:
    wheel = _one(dist, "shiftwork-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py, bin_ = venv / "bin" / "python", venv / "bin"
    subprocess.run([str(py), "-m", "pip", "install", "-q", str(wheel)], check=True,
                   capture_output=True, timeout=600)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    check = subprocess.run(
        [str(py), "-c", "import importlib.util as u, shiftwork, shiftwork.cli; "
         "print(all(u.find_spec(m) is None for m in ('psycopg', 'sentry_sdk', "
         "'opentelemetry')))"],
        capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    # plain install: no psycopg, no Sentry SDK, no OpenTelemetry (each behind its extra)
    assert check.stdout.strip() == "True", check.stderr
    demo = subprocess.run([str(bin_ / "shiftwork"), "demo", "--jobs", "20",
                           "--db", str(tmp_path / "demo.db")],
                          capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "done in" in demo.stdout
    # A PostgreSQL DSN without the extra: one line naming it.
    pg = subprocess.run([str(bin_ / "shiftwork"), "queues", "--dsn",
                         "postgresql://postgres@127.0.0.1:5432/test"],
                        capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert pg.returncode == 2, pg.stdout + pg.stderr
    assert "pip install 'shiftwork[postgres]'" in pg.stderr + pg.stdout


def test_the_sdist_installs_with_its_extras_and_reaches_postgres(dist: Path,
                                                                  tmp_path: Path) -> None:
    """Issue 27, item 1: the install line the docs give today (the package is not on PyPI):
    the sdist (what a source checkout is) with the `postgres` extra, then `migrate` and
    `queues` on the real server."""
    import uuid

    from .conftest import PG_DSN

    sdist = _one(dist, "shiftwork-*.tar.gz")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py, bin_ = venv / "bin" / "python", venv / "bin"
    install = subprocess.run([str(py), "-m", "pip", "install", "-q", f"{sdist}[postgres]"],
                             capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stdout + install.stderr
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    schema = f"pkg_{uuid.uuid4().hex[:10]}"
    for command in ("migrate", "queues"):
        out = subprocess.run([str(bin_ / "shiftwork"), command, "--dsn", PG_DSN,
                              "--schema", schema], capture_output=True, text=True,
                             timeout=120, env=env, cwd=tmp_path)
        assert out.returncode == 0, out.stdout + out.stderr
    import psycopg

    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
