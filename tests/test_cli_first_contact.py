"""Issue 16, items 7 and 11: queue-name typos warned about, output that fits 80 columns,
refusals that exit 1, ISO 8601 in JSON, health that counts every declared queue.

Real processes on a real SQLite file, with COLUMNS=80 as a narrow terminal would set."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import ROOT

APP = '''
from shiftwork import App

app = App("sqlite:///jobs.db")
app.queue("reports", max_wait=3600)

@app.task(queue="emails-transactional-high-priority", max_attempts=1)
def send_the_very_long_named_welcome_email_to_a_user(user_id: int) -> None:
    raise RuntimeError("smtp said no: 550 mailbox unavailable for this particular address")

@app.task(queue="emails")
def send(user_id: int) -> None: ...
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "typo_app.py").write_text(APP)
    assert run(tmp_path, "migrate").returncode == 0
    return tmp_path


def run(cwd: Path, *args: str, app: bool = True) -> subprocess.CompletedProcess[str]:
    argv = [*args, "--app", "typo_app:app"] if app else list(args)
    return subprocess.run([sys.executable, "-m", "shiftwork.cli", *argv], cwd=cwd,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "COLUMNS": "80",
                               "PYTHONPATH": f"{cwd}:{ROOT / 'src'}"})


TYPO = "queue 'emials' is not known: no task declares it and no job is in it; " \
       "did you mean emails?"


def test_unknown_queue_warnings_name_the_known_queues(project: Path) -> None:
    known = "known queues: emails, emails-transactional-high-priority, reports"
    out = run(project, "enqueue", "typo_app.send", "--args", "[1]", "--queue", "emials")
    assert out.returncode == 0 and TYPO in out.stderr and known in out.stderr, out.stderr
    # Now a job is in it: the table has seen it, so it is known.
    out = run(project, "queues", "pause", "emials")
    assert out.returncode == 0 and "not known" not in out.stderr
    # Pausing an unknown name is refused since issue 27 (tests/test_first_contact.py);
    # --force pauses it, with the warning.
    out = run(project, "queues", "pause", "emials-typo", "--force")
    assert out.returncode == 0 and "queue 'emials-typo' is not known" in out.stderr
    assert "emials" in out.stderr.split("known queues:")[1]
    proc = subprocess.Popen([sys.executable, "-m", "shiftwork.cli", "worker", "typo_app:app",
                             "-q", "emails-typo=4"], cwd=project, text=True,
                            stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": f"{project}:{ROOT / 'src'}"})
    try:
        assert proc.stderr is not None
        seen, deadline = "", time.monotonic() + 30
        while "worker.started" not in seen and time.monotonic() < deadline:
            seen += proc.stderr.readline()
        assert "WARNING shiftwork.worker: queue 'emails-typo' is not known" in seen, seen
        assert "did you mean" in seen and "known queues: emails," in seen
    finally:
        proc.terminate()
        proc.wait(30)


def test_output_fits_80_columns_without_ellipsis(project: Path) -> None:
    out = run(project, "enqueue", "typo_app.send_the_very_long_named_welcome_email_to_a_user",
              "--args", "[1]")
    assert out.returncode == 0
    for argv in (["jobs", "list"], ["queues"], ["jobs", "show", "1"], ["top", "--once"]):
        out = run(project, *argv)
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        assert max(len(line) for line in lines) <= 80, out.stdout
        assert "…" not in out.stdout, out.stdout
    # The long names are all there, wrapped inside their cells.
    listing = run(project, "jobs", "list").stdout
    cells = "".join(re.findall(r"^\s+\d*\s+(\S+)", listing, re.MULTILINE))
    assert "send_the_very_long_named_welcome_email_to_a_user" in cells, listing


def test_cancel_of_a_finished_job_is_refused_with_exit_1(project: Path) -> None:
    run(project, "enqueue", "typo_app.send", "--args", "[1]")
    run(project, "enqueue", "typo_app.send", "--args", "[2]")
    assert run(project, "jobs", "cancel", "1").returncode == 0
    out = run(project, "jobs", "cancel", "1", "2")
    assert out.returncode == 1
    assert "job 1: already cancelled, nothing to cancel" in out.stderr
    assert "job 2: cancelled" in out.stdout  # the others are still cancelled


def test_json_instants_are_iso_8601_with_t(project: Path) -> None:
    run(project, "enqueue", "typo_app.send", "--args", "[1]")
    for argv in (["jobs", "list", "--json"], ["jobs", "show", "1", "--json"]):
        text = run(project, *argv).stdout
        stamps = re.findall(r'"(\d{4}-\d\d-\d\d[^"]*)"', text)
        assert stamps, text
        assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", s)
                   for s in stamps), stamps
        json.loads(text)


def test_health_counts_every_declared_queue(project: Path) -> None:
    out = run(project, "health", "--json", "--no-worker-ok")
    report = json.loads(out.stdout)
    assert out.returncode == 0, out.stdout
    assert [q["queue"] for q in report["queues"]] == [
        "emails", "emails-transactional-high-priority", "reports"]
    out = run(project, "health", "--no-worker-ok")
    assert out.stdout.startswith("ok: 3 queues within their thresholds"), out.stdout


def test_top_stops_on_sigint_even_when_started_with_it_ignored(project: Path) -> None:
    # A shell without job control starts `cmd &` with SIGINT ignored; the doc test and
    # people still stop `top` with SIGINT.
    proc = subprocess.Popen([sys.executable, "-m", "shiftwork.cli", "top", "typo_app:app",
                             "--interval", "0.2"], cwd=project, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
                            env={**os.environ, "PYTHONPATH": f"{project}:{ROOT / 'src'}"})
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 30
        while "queues" not in proc.stdout.readline() and time.monotonic() < deadline:
            pass
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
