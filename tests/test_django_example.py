"""The Django integration: examples/django_project's own test suite (real Django, its
test runner, TransactionTestCase: a rollback leaves no job, a commit one; a Django
@task's result; manage.py shiftwork; the dashboard behind Django's login), run on SQLite
and PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from shiftwork import ConfigurationError

pytest.importorskip("django")

PROJECT = Path(__file__).resolve().parents[1] / "examples" / "django_project"


def test_the_example_projects_tests_pass(engine: str, tmp_path: Path) -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "shop_project.settings"}
    if engine == "sqlite":
        env.update(SHOP_SQLITE=str(tmp_path / "shop.sqlite3"),
                   SHOP_TEST_DB=str(tmp_path / "test_shop.sqlite3"))
    else:
        import psycopg.conninfo

        from .conftest import PG_DSN

        info = psycopg.conninfo.conninfo_to_dict(PG_DSN)
        env.update(SHOP_DB="postgres", SHOP_PG_HOST=str(info.get("host", "127.0.0.1")),
                   SHOP_PG_NAME=str(info.get("dbname", "test")),
                   SHOP_PG_USER=str(info.get("user", "postgres")),
                   SHOP_TEST_DB=f"test_shop_{uuid.uuid4().hex[:10]}")
    run = subprocess.run([sys.executable, "manage.py", "test", "shop", "--noinput", "-v", "2"],
                         cwd=PROJECT, env=env, capture_output=True, text=True, timeout=170)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Ran 8 tests" in run.stderr and "OK" in run.stderr
    for name in ("test_a_rollback_leaves_no_job", "test_a_commit_leaves_one_job_that_a_worker_runs",
                 "test_only_djangos_staff_get_in",
                 "test_a_django_task_runs_and_reports_its_result",
                 "test_a_logged_out_browser_is_sent_to_djangos_login"):
        assert f"{name} " in run.stderr and "ok" in run.stderr


def test_the_app_is_built_from_djangos_database_settings(tmp_path: Path) -> None:
    from shiftwork.contrib.django import dsn_of

    db = tmp_path / "db.sqlite3"
    assert dsn_of({"ENGINE": "django.db.backends.sqlite3", "NAME": db}) == f"sqlite:///{db}"
    dsn = dsn_of({"ENGINE": "django.db.backends.postgresql", "NAME": "shop",
                  "HOST": "db.internal", "PORT": 5433, "USER": "web", "PASSWORD": "s3 cret"})
    assert dsn == "dbname=shop host=db.internal port=5433 user=web password='s3 cret'"
    with pytest.raises(ConfigurationError, match=r"needs a SQLite file.*':memory:'"):
        dsn_of({"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"})
    with pytest.raises(ConfigurationError, match=r"'django\.db\.backends\.mysql' is neither"):
        dsn_of({"ENGINE": "django.db.backends.mysql", "NAME": "shop"})


def test_manage_py_migrate_then_a_shiftwork_worker_runs_a_committed_job(tmp_path: Path
                                                                      ) -> None:
    """The real thing on SQLite: manage.py migrate makes shiftwork's tables, a view-like
    atomic block enqueues, and `manage.py shiftwork worker` (a real process) runs it."""
    from shiftwork import App, JobState

    from .conftest import wait_for

    db = tmp_path / "shop.sqlite3"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "shop_project.settings",
           "SHOP_SQLITE": str(db)}

    def manage(*args: str) -> subprocess.CompletedProcess[str]:
        run = subprocess.run([sys.executable, "manage.py", *args], cwd=PROJECT, env=env,
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stdout + run.stderr
        return run

    assert "Applying shiftwork.0001_shiftwork_tables... OK" in manage("migrate", "--noinput").stdout
    manage("shell", "-c", "from django.db import transaction\n"
           "from shop.models import Order\nfrom shop.tasks import send_receipt\n"
           "with transaction.atomic():\n"
           "    send_receipt.enqueue(Order.objects.create(email='a@example.com').id)\n")
    jobs = App(f"sqlite:///{db}")
    # :process: each job in a child process, which imports the App by name
    # (shiftwork.contrib.django:app) and so sets Django up itself.
    worker = subprocess.Popen([sys.executable, "manage.py", "shiftwork", "worker",
                               "--queue", "emails=2:process"], cwd=PROJECT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(lambda: [j.state for j in jobs.list_jobs()] == [JobState.SUCCEEDED],
                 timeout=60, what="the job run by manage.py shiftwork worker")
    finally:
        worker.terminate()
        out, _ = worker.communicate(timeout=30)
        jobs.close()
    assert worker.returncode == 0, out
    # The plain command reaches the same App by name, from the project's folder.
    listed = subprocess.run([sys.executable, "-m", "shiftwork.cli", "jobs", "list", "--state",
                             "succeeded", "--app",
                             "shiftwork.contrib.django:app"], cwd=PROJECT,
                            env={**env, "PYTHONPATH": str(PROJECT)},
                            capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0 and "emails" in listed.stdout, listed.stdout + listed.stderr


def test_the_inline_setting_runs_a_job_when_its_atomic_block_commits(tmp_path: Path) -> None:
    """SHIFTWORK = {"TESTING": "inline"}: not at enqueue (the block may still roll back),
    but on commit; a rolled-back block's job never runs."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "shop_project.settings",
           "SHOP_SQLITE": str(tmp_path / "shop.sqlite3"), "SHOP_SHIFTWORK_TESTING": "inline"}
    script = (
        "from django.db import transaction\n"
        "from shop.models import Order\n"
        "from shop.tasks import SENT, send_receipt\n"
        "with transaction.atomic():\n"
        "    kept = Order.objects.create(email='a@example.com')\n"
        "    send_receipt.enqueue(kept.id)\n"
        "    assert SENT == [], SENT\n"
        "assert SENT == [kept.id], SENT\n"
        "try:\n"
        "    with transaction.atomic():\n"
        "        lost = Order.objects.create(email='b@example.com')\n"
        "        send_receipt.enqueue(lost.id)\n"
        "        raise RuntimeError\n"
        "except RuntimeError:\n"
        "    pass\n"
        "assert SENT == [kept.id], SENT\n"
        "print('inline ok')\n")
    for args in (["migrate", "--noinput"], ["shell", "-c", script]):
        run = subprocess.run([sys.executable, "manage.py", *args], cwd=PROJECT, env=env,
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stdout + run.stderr
    assert "inline ok" in run.stdout
