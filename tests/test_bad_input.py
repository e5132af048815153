"""Bad input gets a clear error naming the problem, and nothing is written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from shiftwork import App, ConfigurationError, PayloadError, StorageError, UnknownTaskError
from shiftwork.worker import Worker

from .conftest import ROOT


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os
    return subprocess.run([sys.executable, "-m", "shiftwork.cli", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=60,
                          env={**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'src'}", **(env or {})})


def test_unknown_task(app: App) -> None:
    @app.task(name="known")
    def known() -> None: ...

    with pytest.raises(UnknownTaskError, match=r"unknown task 'nope' \(registered: known\)"):
        app.enqueue("nope")
    assert app.list_jobs() == []


def test_arguments_must_match_the_signature(app: App) -> None:
    @app.task
    def send(to: str, subject: str = "") -> None: ...

    with pytest.raises(PayloadError, match="missing a required argument: 'to'"):
        send.enqueue()
    with pytest.raises(PayloadError, match="unexpected keyword argument 'cc'"):
        send.enqueue("a@b.c", cc="x")
    assert app.list_jobs() == []


def test_arguments_must_be_json(app: App) -> None:
    from datetime import datetime

    @app.task
    def send(to: str, when: object = None, extra: object = None) -> None: ...

    with pytest.raises(PayloadError, match=r"argument 'when': datetime is not JSON-serializable"):
        send.enqueue("a@b.c", datetime.now())
    with pytest.raises(PayloadError, match=r"argument 'extra'\[1\]: nan is not valid JSON"):
        send.enqueue("a", extra=[1, float("nan")])
    with pytest.raises(PayloadError, match="dict key 1 is not a string"):
        send.enqueue("a", extra={1: "x"})
    # a bulk call with one bad item writes nothing at all
    with pytest.raises(PayloadError):
        app.enqueue_many([send.call("ok"), send.call("bad", when={1, 2})])
    assert app.list_jobs() == []


def test_oversized_payload(make_app) -> None:  # type: ignore[no-untyped-def]
    app = make_app(max_payload_bytes=1024)

    @app.task
    def upload(blob: str) -> None: ...

    with pytest.raises(PayloadError, match=r"over the 1024-byte limit"):
        upload.enqueue("x" * 2000)
    upload.enqueue("x" * 500)
    assert len(app.list_jobs()) == 1


@pytest.mark.parametrize("dsn, message", [
    ("mysql://root@localhost/x", "unsupported database scheme 'mysql'"),
    ("jobs.db", "expected sqlite:///path/jobs.db or postgresql://"),
    ("postgresql://u@h:5432/db?sslmode=bogus&&=", "bad PostgreSQL DSN"),
    ("sqlite:///no/such/folder/jobs.db", "does not exist"),
])
def test_bad_dsn(dsn: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        App(dsn)


@pytest.mark.parametrize("name", ["", "has space", "semi;colon", "x" * 80, "'; DROP TABLE jobs",
                                  "-leading", "default\n"])
def test_hostile_queue_names(name: str, tmp_path: Path) -> None:
    app = App(f"sqlite:///{tmp_path / 'q.db'}")
    with pytest.raises(ConfigurationError, match="bad queue name"):
        app.task(queue=name)(lambda: None)

    @app.task
    def fine() -> None: ...

    with pytest.raises(ConfigurationError, match="bad queue name"):
        fine.using(queue=name).enqueue()
    with pytest.raises(ConfigurationError, match="bad queue name"):
        Worker(app, {name: 1})
    assert not (tmp_path / "q.db").exists() or app.list_jobs() == []


def test_bad_schema_name() -> None:
    with pytest.raises(ConfigurationError, match="bad schema name"):
        App("postgresql://postgres@127.0.0.1/test", schema='x"; drop')


def test_bad_priority(app: App) -> None:
    with pytest.raises(ConfigurationError, match="priority"):
        app.task(priority=1000)(lambda: None)


def test_unreachable_database_at_worker_start() -> None:
    app = App("postgresql://postgres@127.0.0.1:1/nowhere")
    worker = Worker(app, {"default": 1}, connect_timeout=1.5)
    with pytest.raises(StorageError, match=r"gave up reaching the database after 2s.*"
                                           r"127\.0\.0\.1:1/nowhere"):
        worker.start()


def test_worker_command_reports_unreachable_database() -> None:
    result = cli("worker", "tests.apps.unreachable:app", "--connect-timeout", "1")
    assert result.returncode == 2
    assert "gave up reaching the database" in result.stderr
    assert "cannot reach the database" in result.stderr  # the retries were logged


def test_worker_given_a_module_that_does_not_import() -> None:
    result = cli("worker", "tests.apps.broken_import:app")
    assert result.returncode == 2
    assert "importing tests.apps.broken_import failed" in result.stderr
    assert "definitely_not_a_real_module" in result.stderr


def test_worker_given_a_missing_module() -> None:
    result = cli("worker", "tests.apps.no_such_module:app")
    assert result.returncode == 2
    assert "no module named 'tests.apps.no_such_module'" in result.stderr


def test_worker_rejects_bad_queue_option(tmp_path: Path) -> None:
    result = cli("worker", "tests.apps.unreachable:app", "-q", "emails=lots")
    assert result.returncode == 2
    assert "expected NAME=CONCURRENCY" in result.stderr
    result = cli("worker", "tests.apps.unreachable:app", "-q", "bad name=2")
    assert result.returncode == 2
    assert "bad queue name" in result.stderr


def test_cli_enqueue_errors(tmp_path: Path) -> None:
    env = {"SHIFTWORK_TEST_DSN": f"sqlite:///{tmp_path / 'c.db'}"}
    assert cli("migrate", "--app", "tests.apps.cli_app:app", env=env).returncode == 0
    result = cli("enqueue", "nope", "--app", "tests.apps.cli_app:app", env=env)
    assert result.returncode == 2 and "unknown task 'nope'" in result.stderr
    result = cli("enqueue", "greet", "--app", "tests.apps.cli_app:app", "--args", "[1,", env=env)
    assert result.returncode == 2 and "--args must be JSON" in result.stderr
    result = cli("enqueue", "greet", "--app", "tests.apps.cli_app:app", "--args", '["a", "b"]',
                 env=env)
    assert result.returncode == 2 and "arguments do not match" in result.stderr
    result = cli("jobs", "list", "--app", "tests.apps.cli_app:app", "--json", env=env)
    assert result.returncode == 0 and result.stdout.strip() == "[]"


def test_a_trailing_newline_is_not_part_of_a_valid_name() -> None:
    """The name patterns match whole strings: `$` let 'default\\n' through."""
    from shiftwork.core.names import check_queue, check_schema, check_task_name

    for check, name in ((check_queue, "default\n"), (check_schema, "shiftwork\n"),
                        (check_task_name, "billing.charge\n")):
        with pytest.raises(ConfigurationError, match="bad"):
            check(name)
