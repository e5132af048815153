"""Django's Tasks framework on shiftwork (contrib/django/tasks.py): the test project's own
suite (tests/django_tasks_project: Django's API, a real `manage.py shiftwork worker`) on
SQLite and PostgreSQL, with the backport on this interpreter (and Django 6 when
SHIFTWORK_TEST_DJANGO6_PYTHON names an interpreter that has it)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

pytest.importorskip("django")

PROJECT = Path(__file__).resolve().parent / "django_tasks_project"
SRC = Path(__file__).resolve().parents[1] / "src"
TESTS = 28


def run_suite(python: str, engine: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DTASKS_")}
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    if engine == "sqlite":
        env.update(DTASKS_SQLITE=str(tmp_path / "dtasks.sqlite3"),
                   DTASKS_TEST_DB=str(tmp_path / "test_dtasks.sqlite3"))
    else:
        import psycopg.conninfo

        from .conftest import PG_DSN

        info = psycopg.conninfo.conninfo_to_dict(PG_DSN)
        env.update(DTASKS_DB="postgres", DTASKS_PG_HOST=str(info.get("host", "127.0.0.1")),
                   DTASKS_PG_NAME=str(info.get("dbname", "test")),
                   DTASKS_PG_USER=str(info.get("user", "postgres")),
                   DTASKS_TEST_DB=f"test_dtasks_{uuid.uuid4().hex[:10]}")
    return subprocess.run([python, "manage.py", "test", "dtasks", "--noinput", "-v", "2"],
                          cwd=PROJECT, env=env, capture_output=True, text=True, timeout=170)


def check(run: subprocess.CompletedProcess[str]) -> None:
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"Ran {TESTS} tests" in run.stderr and "\nOK" in run.stderr, run.stderr
    for name in ("test_a_task_runs_and_reports_its_return_value",
                 "test_an_atomic_block_commits_or_rolls_back_its_jobs",
                 "test_get_result_equals_what_enqueue_returned",
                 "test_the_worker_sends_djangos_started_and_finished_signals"):
        assert f"{name} " in run.stderr


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_the_backend_passes_its_django_suite(engine: str, tmp_path: Path) -> None:
    if engine == "postgres":
        from .conftest import require_pg

        require_pg()
    check(run_suite(sys.executable, engine, tmp_path))


def test_the_same_suite_on_django_6(tmp_path: Path) -> None:
    python = os.environ.get("SHIFTWORK_TEST_DJANGO6_PYTHON")
    if not python:  # ./dev test sets it when it finds a Python 3.12+ (.venv-django6)
        from .conftest import IN_CI

        if IN_CI:
            pytest.fail("SHIFTWORK_TEST_DJANGO6_PYTHON names no interpreter with Django 6, "
                        "and CI must not skip it")
        pytest.skip("SHIFTWORK_TEST_DJANGO6_PYTHON names no interpreter with Django 6")
    check(run_suite(python, "sqlite", tmp_path))


def test_without_django_tasks_the_backend_says_what_to_install() -> None:
    """A project without Django Tasks still starts (shiftwork's Django app imports every
    app's tasks module, this one too); naming the backend says what is missing."""
    script = (
        "import sys\n"
        "sys.modules['django.tasks'] = sys.modules['django_tasks'] = None\n"
        "import shiftwork.contrib.django.tasks as t\n"
        "try:\n"
        "    t.ShiftworkBackend\n"
        "except ImportError as exc:\n"
        "    print(exc)\n")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60, env={**os.environ, "PYTHONPATH": str(SRC)})
    assert run.returncode == 0, run.stderr
    assert "pip install 'shiftwork[django-tasks]'" in run.stdout
