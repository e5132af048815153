"""Issue 29 (console-history): per-job logs. What a job logs through ``logging`` and
``ctx.log`` while it runs is kept per attempt, bounded, deleted with the job, shown on the
job page and by ``shiftwork jobs logs ID`` (``--follow`` for a running job)."""

from __future__ import annotations

import dataclasses
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from shiftwork import (
    App,
    Backoff,
    ConfigurationError,
    FakeClock,
    JobContext,
    JobState,
    Settings,
)
from shiftwork.testing import drain
from shiftwork.web import create_dashboard

from .conftest import FAST, ROOT, running_worker, wait_for
from .test_security import TOKEN, Served, login

log = logging.getLogger("billing.charge")
log.setLevel(logging.INFO)  # as an application's logging config would


def test_records_are_kept_per_attempt_with_their_tracebacks(wapp: App) -> None:
    outside = logging.getLogger("billing.elsewhere")
    outside.setLevel(logging.INFO)

    @wapp.task(name="billing.charge", max_attempts=2, retry=Backoff(initial=0, jitter=False))
    def charge(ctx: JobContext, customer: int) -> str:
        log.info("charging customer %s", customer)
        logging.getLogger("billing.charge.debug").debug("not let through: level INFO")
        ctx.log("attempt %s of %s", ctx.attempt, ctx.max_attempts)
        if ctx.attempt == 1:
            try:
                raise ConnectionError("gateway timeout")
            except ConnectionError:
                log.exception("the gateway failed")
                raise
        return "ok"

    job_id = charge.enqueue(42).id
    outside.info("logged outside any job: kept nowhere")
    drain(wapp)
    drain(wapp)
    assert wapp.get_job(job_id).state is JobState.SUCCEEDED
    lines = wapp.store.job_logs.list_lines(job_id)
    assert [(ln.attempt, ln.seq, ln.level, ln.logger) for ln in lines] == [
        (1, 1, "INFO", "billing.charge"), (1, 2, "INFO", "shiftwork.job"),
        (1, 3, "ERROR", "billing.charge"),
        (2, 1, "INFO", "billing.charge"), (2, 2, "INFO", "shiftwork.job")]
    assert lines[0].message == "charging customer 42"
    assert lines[1].message == "attempt 1 of 2"
    assert lines[2].message.startswith("the gateway failed\nTraceback")
    assert "ConnectionError: gateway timeout" in lines[2].message
    assert all("elsewhere" not in ln.logger for ln in lines)
    # One attempt's, and after a place (how --follow reads on).
    assert [ln.seq for ln in wapp.store.job_logs.list_lines(job_id, attempt=2)] == [1, 2]
    assert [(ln.attempt, ln.seq) for ln in wapp.store.job_logs.list_lines(job_id, after=(1, 2))
            ] == [(1, 3), (2, 1), (2, 2)]


def test_async_jobs_keep_their_own_records(wapp: App) -> None:
    @wapp.task(name="billing.async_charge")
    async def async_charge(ctx: JobContext, n: int) -> None:
        log.info("async %s", n)
        ctx.log("done %s", n)

    ids = [async_charge.enqueue(n).id for n in range(3)]
    drain(wapp)
    for n, job_id in enumerate(ids):
        assert [ln.message for ln in wapp.store.job_logs.list_lines(job_id)] == [f"async {n}",
                                                                          f"done {n}"]


def test_odd_records_are_kept_escaped_on_both_engines(wapp: App) -> None:
    """NUL (PostgreSQL text refuses it), a lone surrogate and a bad format string: each
    is kept, escaped, and costs no other record of its batch."""

    @wapp.task(name="odd")
    def odd(ctx: JobContext) -> None:
        ctx.log("nul \x00 here")
        ctx.log("surrogate \ud800 here")
        ctx.log("%d apples", "not a number")
        ctx.log("the last one")

    job_id = odd.enqueue().id
    drain(wapp)
    messages = [ln.message for ln in wapp.store.job_logs.list_lines(job_id)]
    assert messages[0] == "nul \\x00 here" and messages[1] == "surrogate \\ud800 here"
    assert "apples" in messages[2] and messages[3] == "the last one"


def test_each_attempt_is_bounded_and_says_what_it_dropped(make_app: Any) -> None:
    app = make_app(settings=dataclasses.replace(FAST, job_log_lines=5, job_log_bytes=2048))

    @app.task(name="chatty")
    def chatty(ctx: JobContext, size: int) -> None:
        for i in range(size):
            ctx.log("line %s", i)

    @app.task(name="wide")
    def wide(ctx: JobContext) -> None:
        ctx.log("x" * 5000)
        ctx.log("after the cut")

    many = chatty.enqueue(100).id
    big = wide.enqueue().id
    drain(app)
    lines = app.store.job_logs.list_lines(many)
    assert [ln.message for ln in lines[:5]] == [f"line {i}" for i in range(5)]
    assert len(lines) == 6 and lines[5].level == "WARNING"
    assert lines[5].message.startswith("95 more records not kept")
    assert "job_log_lines=5" in lines[5].message
    cut = app.store.job_logs.list_lines(big)
    assert len(cut[0].message.encode()) <= 2048 and cut[0].message.endswith("[cut: job_log_bytes]")
    assert cut[1].message.startswith("1 more records not kept")

    off = make_app(settings=dataclasses.replace(FAST, job_log_lines=0))
    off.task(name="chatty")(chatty.fn)
    quiet = off.tasks["chatty"].enqueue(3).id
    drain(off)
    assert off.store.job_logs.list_lines(quiet) == []


@pytest.mark.parametrize("field, value", [("job_log_lines", -1), ("job_log_lines", 1.5),
                                          ("job_log_bytes", 10), ("job_log_bytes", True)])
def test_bad_log_limits_are_refused_by_name(field: str, value: Any) -> None:
    with pytest.raises(ConfigurationError, match=f"Settings.{field}"):
        Settings(**{field: value})


def test_records_go_with_their_job(wapp: App, clock: FakeClock) -> None:
    @wapp.task(name="gone", max_attempts=1)
    def gone(ctx: JobContext, fail: bool) -> None:
        ctx.log("here")
        if fail:
            raise RuntimeError("dead")

    done, dead = gone.enqueue(False).id, gone.enqueue(True).id
    drain(wapp)
    assert wapp.store.job_logs.list_lines(done) and wapp.store.job_logs.list_lines(dead)
    assert wapp.store.observe.jobs_discard([dead]) == [dead]
    assert wapp.store.job_logs.list_lines(dead) == []
    clock.advance(1)
    assert wapp.store.jobs.prune(0.5, 0.5)
    assert wapp.store.job_logs.list_lines(done) == []
    wapp.store.job_logs.add(done, [])  # nothing to write: no statement, no error


def test_job_page_and_logs_page_show_records_escaped(app_on_sqlite: App) -> None:
    app = app_on_sqlite

    @app.task(name="shout")
    def shout(ctx: JobContext) -> None:
        ctx.log("<script>alert(1)</script> and a very long token tok_" + "A" * 300)
        for i in range(3):
            ctx.log("step %s", i)

    job_id = shout.enqueue().id
    drain(app)
    with Served(create_dashboard(app, token=TOKEN)) as served, served.client() as c:
        assert c.get(f"/jobs/{job_id}/logs").status_code == 401
        login(c)
        page = c.get(f"/jobs/{job_id}").text
        logs = page.split('id="logs-live"')[1].split("<h2>")[0]
        assert "&lt;script&gt;" in logs and "<script>alert" not in page
        assert "step 2" in logs and "data-live" not in logs  # finished: no live refresh
        every = c.get(f"/jobs/{job_id}/logs").text
        assert every.count('<pre class="log">') == 4
        one = c.get(f"/jobs/{job_id}/logs", params={"after": "1.2"}).text
        assert one.count('<pre class="log">') == 2
        assert c.get(f"/jobs/{job_id}/logs", params={"after": "x"}).status_code == 400
        assert c.get(f"/jobs/{job_id}/logs", params={"attempt": "-1"}).status_code == 400
        assert c.get("/jobs/99999999/logs").status_code == 404
        assert c.get("/jobs/99999999999999999999/logs").status_code == 404
        fragment = c.get(f"/jobs/{job_id}/logs", params={"live": "1"}).text
        assert "<html" not in fragment and "step 1" in fragment


@pytest.fixture
def app_on_sqlite(tmp_path: Path) -> Any:
    app = App(f"sqlite:///{tmp_path / 'jobs.db'}", settings=FAST)
    app.migrate()
    yield app
    app.close()


def _cli(db: dict[str, str], *args: str, **kwargs: Any) -> Any:
    env = {**os.environ, "SHIFTWORK_TEST_DSN": db["dsn"], "SHIFTWORK_TEST_SCHEMA": db["schema"],
           "SHIFTWORK_APP": "tests.apps.cli_app:app", "COLUMNS": "200"}
    return subprocess.Popen([sys.executable, "-m", "shiftwork.cli", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def test_cli_prints_and_follows_a_running_jobs_records(db: dict[str, str],
                                                       make_app: Any, tmp_path: Path) -> None:
    app = make_app()
    release = threading.Event()

    @app.task(name="slow_import")
    def slow_import(ctx: JobContext) -> None:
        ctx.log("imported batch 1")
        release.wait(30)
        ctx.log("imported batch 2 \x1b[31mred\x1b[0m")

    job_id = slow_import.enqueue().id
    with running_worker(app, {"default": 1}):
        wait_for(lambda: app.store.job_logs.list_lines(job_id), what="the first record written")
        follower = _cli(db, "jobs", "logs", str(job_id), "--follow", "--interval", "0.2")
        assert follower.stdout is not None
        first = follower.stdout.readline()  # printed while the job still runs
        assert "#1 INFO    shiftwork.job: imported batch 1" in first
        assert app.get_job(job_id).state is JobState.RUNNING
        release.set()
        out, err = follower.communicate(timeout=60)
    assert follower.returncode == 0, err
    assert "imported batch 2 \\x1b[31mred\\x1b[0m" in out  # escaped, not obeyed
    assert f"job {job_id}: succeeded" in err
    once = _cli(db, "jobs", "logs", str(job_id), "--json")
    out, err = once.communicate(timeout=60)
    assert once.returncode == 0, err
    assert [line.count('"seq"') for line in out.splitlines()] == [1, 1]
    unknown = _cli(db, "jobs", "logs", "987654")
    out, err = unknown.communicate(timeout=60)
    assert unknown.returncode == 2 and "987654" in err
