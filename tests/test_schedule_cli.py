"""`shiftwork cron` and `shiftwork schedules ...` through the command line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from shiftwork import App
from shiftwork.cli import main
from shiftwork.schedules.scheduler import reconcile

# Worked cases from SCHEDULING.md's schedule_examples.json (the cron module's own tests
# run all of them; these check the command's plumbing and JSON format).
EXAMPLES = [
    ("30 2 * * *", "America/New_York", "2025-03-08T12:00:00Z",
     ["2025-03-09T07:30:00Z", "2025-03-10T06:30:00Z", "2025-03-11T06:30:00Z"]),
    ("@hourly", "America/New_York", "2025-11-02T05:30:00Z",
     ["2025-11-02T06:00:00Z", "2025-11-02T07:00:00Z", "2025-11-02T08:00:00Z"]),
    ("45 1 * * *", "Australia/Lord_Howe", "2025-04-05T00:00:00Z",
     ["2025-04-05T14:45:00Z", "2025-04-06T15:15:00Z", "2025-04-07T15:15:00Z"]),
]


@pytest.mark.parametrize(("cron", "tz", "after", "expected"), EXAMPLES)
def test_cron_command_json(cron: str, tz: str, after: str, expected: list[str]) -> None:
    out = CliRunner().invoke(main, ["cron", cron, "--tz", tz, "--after", after, "-n", "3",
                                    "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout) == expected


def test_cron_command_prints_utc_and_local() -> None:
    out = CliRunner().invoke(main, ["cron", "30 2 * * *", "--tz", "America/New_York",
                                    "--after", "2025-03-08T12:00:00Z", "-n", "1"])
    assert out.exit_code == 0
    assert "2025-03-09T07:30:00Z  2025-03-09T03:30:00-04:00" in out.output


@pytest.mark.parametrize(("args", "message"), [
    (["61 * * * *"], "minute field"),
    (["0 0 * 13 *"], "month field"),
    (["@reboot"], "@reboot"),
    (["0 0 * * *", "--tz", "EST"], "abbreviation"),
    (["0 0 * * *", "--after", "2025-01-01T00:00:00"], "no time zone"),
])
def test_cron_command_names_the_problem(args: list[str], message: str) -> None:
    out = CliRunner().invoke(main, ["cron", *args])
    assert out.exit_code == 2
    assert message in out.output


def test_schedules_commands(tmp_path: Path) -> None:
    dsn = f"sqlite:///{tmp_path / 'jobs.db'}"
    app = App(dsn)
    app.migrate()

    @app.periodic("0 2 * * *", tz="Europe/Berlin", name="nightly", expect_success_within=3600)
    def nightly() -> None: ...

    reconcile(app.runtime)
    run = CliRunner().invoke
    out = run(main, ["schedules", "--dsn", dsn, "--json"])
    assert out.exit_code == 0, out.output
    (row,) = json.loads(out.stdout)
    assert row["name"] == "nightly" and row["next_fire_local"][11:19] == "02:00:00"
    assert row["late"] is False and row["paused"] is False
    out = run(main, ["schedules", "--dsn", dsn, "next", "nightly", "-n", "2",
                     "--after", "2025-03-29T00:00:00Z"])
    assert out.stdout.split() == ["2025-03-29T01:00:00Z", "2025-03-29T02:00:00+01:00",
                                  "2025-03-30T01:00:00Z", "2025-03-30T03:00:00+02:00"]
    assert run(main, ["schedules", "--dsn", dsn, "pause", "nightly"]).exit_code == 0
    assert json.loads(run(main, ["schedules", "--dsn", dsn, "--json"]).stdout)[0]["paused"]
    assert "resumed" in run(main, ["schedules", "--dsn", dsn, "resume", "nightly"]).output
    out = run(main, ["schedules", "--dsn", dsn, "trigger", "nightly"])
    assert "enqueued job" in out.output
    out = run(main, ["schedules", "--dsn", dsn, "backfill", "nightly",
                     "--from", "2025-01-01T00:00:00Z", "--to", "2025-01-02T23:59:59Z"])
    assert "2 new" in out.output, out.output
    out = run(main, ["schedules", "--dsn", dsn, "trigger", "nope"])
    assert out.exit_code == 2 and "no schedule named 'nope'" in out.output
    app.close()


def test_schedules_add_and_remove_on_the_command_line(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    dsn = f"sqlite:///{tmp_path / 'jobs.db'}"
    monkeypatch.setenv("SHIFTWORK_TEST_DSN", dsn)
    # The command line imports the app afresh, on this test's database.
    monkeypatch.delitem(sys.modules, "tests.apps.cli_app", raising=False)
    App(dsn).migrate()
    run = CliRunner().invoke
    target = ["--app", "tests.apps.cli_app:app"]
    out = run(main, ["schedules", *target, "add", "greet-acme", "0 6 * * MON", "greet",
                     "--args", '["acme"]', "--tz", "Europe/Paris", "--catchup", "all"])
    assert out.exit_code == 0, out.output
    assert "added greet-acme: greet on 0 6 * * MON (Europe/Paris); next fire" in out.output
    (row,) = json.loads(run(main, ["schedules", "--dsn", dsn, "--json"]).stdout)
    assert row["origin"] == "runtime" and row["catchup"] == "all"
    assert row["next_fire_local"][11:19] == "06:00:00"
    for args, message in [
        (["add", "x", "0 6 * * MOON", "greet", "--args", '["a"]'], "day-of-week"),
        (["add", "x", "0 6 * * MON", "greet", "--tz", "Mars/Olympus", "--args", '["a"]'],
         "Mars/Olympus"),
        (["add", "x", "0 6 * * MON", "gret"], "unknown task 'gret'"),
        (["add", "x", "0 6 * * MON", "greet", "--args", "[1,"], "must be JSON"),
        (["add", "greet-acme", "0 6 * * MON", "greet", "--args", '["a"]'], "already exists"),
        (["remove", "nope"], "no run-time schedule named 'nope'"),
    ]:
        out = run(main, ["schedules", *target, *args])
        assert out.exit_code == 2 and message in out.output, (args, out.output)
    out = run(main, ["schedules", "--dsn", dsn, "add", "x", "0 6 * * MON", "greet"])
    assert out.exit_code == 2 and "give --app" in out.output
    assert run(main, ["schedules", "--dsn", dsn, "remove", "greet-acme"]).exit_code == 0
    assert json.loads(run(main, ["schedules", "--dsn", dsn, "--json"]).stdout) == []
