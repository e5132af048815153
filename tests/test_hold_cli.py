"""`shiftwork jobs hold / release / run-now / update` (issue 30), the real command."""

from __future__ import annotations

import json

from shiftwork import App, JobState

from .conftest import apps_on
from .test_cli import cli


def test_hold_release_run_now_update_from_the_command_line(db: dict[str, str]) -> None:
    assert cli(db, "migrate").returncode == 0
    later = cli(db, "enqueue", "greet", "--args", '["bob"]', "--delay", "3600")
    due = cli(db, "enqueue", "greet", "--args", '["ada"]')
    ids = [int(x.stdout.split()[1]) for x in (later, due)]

    held = cli(db, "jobs", "hold", *map(str, ids))
    assert held.returncode == 0, held.stderr
    assert f"job {ids[0]}: held" in held.stdout and f"job {ids[1]}: held" in held.stdout
    queues = json.loads(cli(db, "queues", "--json").stdout)
    assert [(q["queue"], q["held"], q["available"]) for q in queues] == [("default", 2, 0)]
    table = cli(db, "queues").stdout
    assert "held" in table.splitlines()[1] or "held" in table

    moved = cli(db, "jobs", "update", str(ids[1]), "--priority", "9", "--queue", "urgent",
                "--run-at", "2030-01-01T00:00:00Z")
    assert moved.returncode == 0, moved.stderr
    assert f"job {ids[1]}: held" in moved.stdout
    bad = cli(db, "jobs", "update", str(ids[1]), "--priority", "1000")
    assert bad.returncode == 2 and "--priority" in bad.stderr
    zoneless = cli(db, "jobs", "update", str(ids[1]), "--run-at", "2030-01-01T00:00")
    assert zoneless.returncode == 2 and "no time zone" in zoneless.stderr
    nothing = cli(db, "jobs", "update", str(ids[1]))
    assert nothing.returncode == 2 and "give --run-at, --priority or --queue" in nothing.stderr

    released = cli(db, "jobs", "release", str(ids[0]))
    assert f"job {ids[0]}: scheduled" in released.stdout  # its run_at is an hour ahead
    twice = cli(db, "jobs", "release", str(ids[0]))
    assert twice.returncode == 1 and "scheduled: it is not held" in twice.stderr
    now = cli(db, "jobs", "run-now", str(ids[0]), str(ids[1]))
    assert now.returncode == 0, now.stderr
    assert f"job {ids[0]}: available" in now.stdout and f"job {ids[1]}: available" in now.stdout

    # by filter, audited as the command's user
    dry = cli(db, "jobs", "hold", "--queue", "urgent", "--dry-run")
    assert "1 jobs match" in dry.stdout and "queue=urgent: would hold them" in dry.stdout
    by_filter = cli(db, "jobs", "hold", "--queue", "urgent", "--yes")
    assert "held 1 of 1 jobs matching" in by_filter.stdout, by_filter.stderr
    unheld = cli(db, "jobs", "release", "--queue", "urgent", "--yes")
    assert "released 1 of 1 jobs" in unheld.stdout, unheld.stderr

    with apps_on(db["dsn"], db["schema"]) as make:
        app: App = make()
        job = app.get_job(ids[1])
        assert (job.state, job.queue, job.priority) == (JobState.AVAILABLE, "urgent", 9)
        audit = app.store.console.bulk_actions_list(20)
        assert [a.action for a in audit][:3] == ["release", "hold", "run_now"]
        assert all("(cli)" in a.who for a in audit)
        assert "update" in [a.action for a in audit]
