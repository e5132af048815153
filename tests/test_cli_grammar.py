"""One command grammar: --app / --dsn / --schema (and their env vars) on every command."""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from shiftwork.cli import main

# Commands that never open a database: `cron` computes fire times, `demo` makes its own.
NO_DATABASE = {"shiftwork cron", "shiftwork demo"}

APP_CODE = '''
from shiftwork import App

app = App("sqlite:///{db}")

@app.periodic("0 2 * * *", tz="Europe/Berlin", name="nightly-invoices")
def nightly_invoices() -> None: ...

@app.periodic("*/5 * * * *")
def refresh_rates() -> None: ...
'''


def _commands(group: click.Group, path: str = "shiftwork") -> list[tuple[str, click.Command]]:
    out: list[tuple[str, click.Command]] = [(path, group)]
    for name, cmd in group.commands.items():
        if isinstance(cmd, click.Group):
            out += _commands(cmd, f"{path} {name}")
        else:
            out.append((f"{path} {name}", cmd))
    return out


def test_every_command_and_group_takes_the_same_three_options() -> None:
    checked = 0
    for path, cmd in _commands(main):
        if path in NO_DATABASE:
            continue
        opts = {o for p in cmd.params if isinstance(p, click.Option) for o in p.opts}
        assert {"--app", "--dsn", "--schema"} <= opts, path
        checked += 1
    assert checked >= 25


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A user's app file in its own folder, with a migrated SQLite database."""
    sys.modules.pop("gram_app", None)  # each test's app points at its own file
    db = tmp_path / "jobs.db"
    (tmp_path / "gram_app.py").write_text(APP_CODE.format(db=db))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for var in ("SHIFTWORK_APP", "SHIFTWORK_DSN", "SHIFTWORK_SCHEMA"):
        monkeypatch.delenv(var, raising=False)
    assert CliRunner().invoke(main, ["migrate", "--app", "gram_app:app"]).exit_code == 0
    yield tmp_path
    sys.modules.pop("gram_app", None)


@pytest.mark.parametrize("argv", [
    ["--app", "gram_app:app", "schedules", "next", "nightly-invoices", "-n", "2"],
    ["schedules", "--app", "gram_app:app", "next", "nightly-invoices", "-n", "2"],
    ["schedules", "next", "nightly-invoices", "--app", "gram_app:app", "-n", "2"],
    ["schedules", "next", "nightly-invoices", "-n", "2", "--app", "gram_app:app"],
])
def test_app_in_any_position(project: Path, argv: list[str]) -> None:
    out = CliRunner().invoke(main, argv)
    assert out.exit_code == 0, out.output
    assert out.output.count("+01:00") == 2


def test_env_vars_and_precedence(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    monkeypatch.setenv("SHIFTWORK_APP", "gram_app:app")
    assert runner.invoke(main, ["queues", "pause", "reports", "--force"]).exit_code == 0
    # A --dsn typed now wins over SHIFTWORK_APP from the shell.
    other = project / "other.db"
    assert runner.invoke(main, ["migrate", "--dsn", f"sqlite:///{other}"]).exit_code == 0
    out = runner.invoke(main, ["queues", "--json", "--dsn", f"sqlite:///{other}"])
    assert out.exit_code == 0 and '"paused": true' not in out.output, out.output
    monkeypatch.delenv("SHIFTWORK_APP")
    monkeypatch.setenv("SHIFTWORK_DSN", f"sqlite:///{project / 'jobs.db'}")
    out = runner.invoke(main, ["queues", "--json"])
    assert out.exit_code == 0 and '"paused": true' in out.output, out.output
    with sqlite3.connect(project / "jobs.db") as conn:
        assert conn.execute("SELECT queue FROM queue_settings WHERE paused").fetchall() == [
            ("reports",)]


def test_schema_from_env_on_postgres(monkeypatch: pytest.MonkeyPatch) -> None:
    import uuid

    import psycopg

    from .conftest import PG_DSN, require_pg

    require_pg()
    schema = f"t_{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv("SHIFTWORK_DSN", PG_DSN)
    monkeypatch.setenv("SHIFTWORK_SCHEMA", schema)
    monkeypatch.delenv("SHIFTWORK_APP", raising=False)
    try:
        runner = CliRunner()
        assert runner.invoke(main, ["migrate"]).exit_code == 0
        assert runner.invoke(main, ["queues", "pause", "bulk", "--force"]).exit_code == 0
        out = runner.invoke(main, ["queues", "--json", "--schema", schema])
        assert '"paused": true' in out.output, out.output
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_a_bare_schedule_name_gets_did_you_mean(project: Path) -> None:
    out = CliRunner().invoke(main, ["schedules", "next", "refresh_rates", "--app",
                                    "gram_app:app"])
    assert out.exit_code == 2
    assert "did you mean gram_app.refresh_rates?" in out.output
    assert "known: gram_app.refresh_rates, nightly-invoices" in out.output


def test_commands_that_need_code_say_so(project: Path) -> None:
    dsn = f"sqlite:///{project / 'jobs.db'}"
    runner = CliRunner()
    for argv in (["worker", "--dsn", dsn], ["enqueue", "x", "--dsn", dsn]):
        out = runner.invoke(main, argv)
        assert out.exit_code == 2 and "give --app MODULE:ATTR" in out.output, out.output
    both = runner.invoke(main, ["queues", "--app", "gram_app:app", "--dsn", dsn])
    assert both.exit_code == 2 and "not both" in both.output

