"""Issue 16, items 5, 6 and 8: migration is explicit, SQLite paths are resolved and shown,
a refused connection fails at once. Real processes, real files, the real Postgres."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psycopg
import pytest

from shiftwork import App
from shiftwork.core.errors import DatabaseAuthError, DatabaseMissingError, NotMigratedError

from .conftest import PG_DSN, ROOT, require_pg

READ_ONLY = [["queues"], ["jobs", "list"], ["health"], ["metrics"], ["top", "--once"],
             ["schedules"], ["queues", "--json"]]


def cli(*args: str, cwd: Path = ROOT, env: dict[str, str] | None = None,
        timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "shiftwork.cli", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'src'}",
                               **(env or {})})


def _schema_exists(schema: str) -> bool:
    with psycopg.connect(PG_DSN) as c:
        return c.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s",
                         (schema,)).fetchone() is not None


@pytest.mark.postgres
@pytest.mark.parametrize("argv", READ_ONLY, ids=" ".join)
def test_read_only_commands_never_create_a_schema(argv: list[str]) -> None:
    require_pg()
    schema = f"typo_{uuid.uuid4().hex[:8]}"
    result = cli(*argv, "--dsn", PG_DSN, "--schema", schema)
    assert result.returncode == 2, result.stderr
    assert f"schema {schema} is not migrated: run shiftwork migrate" in result.stderr
    assert result.stderr.startswith(f"shiftwork: postgresql 127.0.0.1:5432/test schema {schema}")
    assert not _schema_exists(schema)


@pytest.mark.postgres
def test_migrate_creates_then_reports_up_to_date() -> None:
    require_pg()
    schema = f"mig_{uuid.uuid4().hex[:8]}"
    try:
        first = cli("migrate", "--dsn", PG_DSN, "--schema", schema)
        assert first.returncode == 0 and "applied migrations: [1," in first.stdout
        again = cli("migrate", "--dsn", PG_DSN, "--schema", schema)
        assert again.returncode == 0 and "up to date" in again.stdout
        assert cli("queues", "--dsn", PG_DSN, "--schema", schema).returncode == 0
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as c:
            c.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_missing_sqlite_file_is_an_error_and_stays_missing(tmp_path: Path) -> None:
    for argv in [*READ_ONLY, ["queues", "pause", "emails"], ["jobs", "cancel", "1"]]:
        result = cli(*argv, "--dsn", "sqlite:///jobs.db", cwd=tmp_path)
        assert result.returncode == 2, (argv, result.stderr)
        assert f"SQLite file {tmp_path / 'jobs.db'} does not exist: run `shiftwork migrate`" \
            in result.stderr, argv
    assert list(tmp_path.iterdir()) == []


def test_relative_path_resolved_once_and_shown(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    made = cli("migrate", "--dsn", "sqlite:///jobs.db", cwd=tmp_path)
    assert made.returncode == 0
    assert made.stderr.splitlines()[0] == f"shiftwork: sqlite {tmp_path / 'jobs.db'}"
    # The same DSN from another folder names another file, and says so.
    elsewhere = cli("queues", "--dsn", "sqlite:///jobs.db", cwd=tmp_path / "sub")
    assert elsewhere.returncode == 2
    assert elsewhere.stderr.splitlines()[0] == f"shiftwork: sqlite {tmp_path / 'sub/jobs.db'}"
    # A later chdir does not move an App's database.
    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        app = App("sqlite:///jobs.db")
    finally:
        os.chdir(here)
    assert app.queue_stats() == []


def test_library_default_checks_and_auto_migrate_migrates(tmp_path: Path,
                                                          caplog: pytest.LogCaptureFixture
                                                          ) -> None:
    dsn = f"sqlite:///{tmp_path / 'jobs.db'}"
    with pytest.raises(DatabaseMissingError, match="does not exist"):
        App(dsn).queue_stats()
    assert not (tmp_path / "jobs.db").exists()
    caplog.set_level("INFO", logger="shiftwork.migrate")
    assert App(dsn, auto_migrate=True).queue_stats() == []
    assert "applied migrations 1, 2, 3, 4, 5, 6" in caplog.text
    assert App(dsn).queue_stats() == []  # migrated now: the check passes


@pytest.mark.postgres
def test_library_not_migrated_error_on_postgres() -> None:
    require_pg()
    schema = f"nm_{uuid.uuid4().hex[:8]}"
    with pytest.raises(NotMigratedError, match=f"schema {schema} is not migrated"):
        App(PG_DSN, schema=schema).list_jobs()
    assert not _schema_exists(schema)


def test_worker_refuses_then_migrates_with_the_flag(tmp_path: Path) -> None:
    env = {"SHIFTWORK_TEST_DSN": f"sqlite:///{tmp_path / 'w.db'}"}
    refused = cli("worker", "tests.apps.cli_app:app", env=env)
    assert refused.returncode == 2 and "does not exist: run `shiftwork migrate`" in refused.stderr
    proc = subprocess.Popen([sys.executable, "-m", "shiftwork.cli", "worker",
                             "tests.apps.cli_app:app", "--migrate"], cwd=ROOT, text=True,
                            stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'src'}", **env})
    try:
        assert proc.stderr is not None
        deadline, seen = time.monotonic() + 30, ""
        while "applied migrations" not in seen and time.monotonic() < deadline:
            seen += proc.stderr.readline()
        assert "applied migrations 1, 2, 3, 4, 5, 6" in seen, seen
    finally:
        proc.terminate()
        proc.wait(30)


@pytest.mark.postgres
@pytest.mark.parametrize(("dsn", "error", "message"), [
    ("postgresql://postgres@127.0.0.1:5432/no_such_db_16", DatabaseMissingError,
     'database "no_such_db_16" does not exist (SQLSTATE 3D000)'),
    ("postgresql://no_such_role_16@127.0.0.1:5432/test", DatabaseAuthError,
     'refused the login: role "no_such_role_16" does not exist'),
])
def test_refused_connection_fails_at_once(dsn: str, error: type[Exception],
                                          message: str) -> None:
    require_pg()
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        App(dsn).list_jobs()
    # The worker gives up at once too, though it would retry an outage for 60 s.
    started = time.monotonic()
    result = cli("worker", "tests.apps.cli_app:app", "--migrate",
                 env={"SHIFTWORK_TEST_DSN": dsn})
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert "cannot reach the database" not in result.stderr  # never retried
    assert time.monotonic() - started < 15
