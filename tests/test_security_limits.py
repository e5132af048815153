"""Security round 2 (issue 26): numbers, events and internal tasks, on both engines.

Each test names the finding it pins; each failed on the code before its fix.
"""

from __future__ import annotations

import json
import logging
import math
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from shiftwork import App, ConfigurationError, FakeClock, JobContext, JobState, Settings
from shiftwork.core.control import RetryIn, Snooze
from shiftwork.core.errors import PayloadError
from shiftwork.flow.claiming import claim
from shiftwork.jobs.enqueue import insert_rows
from shiftwork.model.limits import RateLimit
from shiftwork.observe.metrics import Metrics
from shiftwork.schedules.stored import schedules_of
from shiftwork.testing import drain
from shiftwork.web import create_dashboard

from .conftest import FAST, ROOT, running_worker
from .test_security import TOKEN, Served

T0 = datetime(2030, 1, 1, tzinfo=UTC)


@pytest.fixture
def clocked(make_app: Callable[..., App]) -> tuple[App, FakeClock]:
    clock = FakeClock(T0)
    return make_app(clock=clock), clock


def _cli(db: dict[str, str], tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """``shiftwork ARGV`` as a real process, against the test's database."""
    env = {**os.environ, "SHIFTWORK_DSN": db["dsn"], "SHIFTWORK_SCHEMA": db["schema"],
           "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT / 'src'}"}
    env.pop("SHIFTWORK_APP", None)
    return subprocess.run([sys.executable, "-m", "shiftwork.cli", *argv], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)


def _write_app(tmp_path: Path, name: str, body: str) -> str:
    (tmp_path / f"{name}.py").write_text(
        "import os\nfrom shiftwork import App, JobContext\n"
        "app = App(os.environ['SHIFTWORK_DSN'], schema=os.environ['SHIFTWORK_SCHEMA'])\n"
        + body)
    return f"{name}:app"


def _store_hold(app: App, key: str) -> None:
    """A hold as a release before the bounds stored it, written straight into the table:
    infinite on SQLite (retry_after=inf), past year 9999 on PostgreSQL (1e12 and more)."""
    with app.store.transaction() as conn:
        if app.store.engine == "sqlite":
            conn.execute("INSERT INTO rate_buckets (key, tokens, updated_at) "
                         "VALUES (?, 0, ?)", (key, math.inf))
        else:
            conn.execute(f"INSERT INTO {app.schema}.rate_buckets (key, tokens, updated_at) "
                         "VALUES (%s, 0, %s)", (key, "33658-09-27"))


# -- finding 2: ctx.rate_limited(retry_after=...) and every number that reaches the database


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_rate_limited_refuses_a_retry_after_that_is_not_finite_seconds(
        clocked: tuple[App, FakeClock], bad: Any) -> None:
    """Finding 2: a NaN or infinite retry_after is refused with an error naming it, and no
    hold is stored (inf held the task forever, and on SQLite left its job running; NaN
    was taken). Negative and zero values were refused before, and still are."""
    app, _ = clocked

    @app.task(rate_limit="100/s", max_attempts=1)
    def call_partner(ctx: JobContext) -> None:
        ctx.rate_limited(retry_after=bad)

    job = call_partner.enqueue()
    drain(app, max_jobs=1)
    got = app.get_job(job.id)
    assert got.state is JobState.DEAD
    assert "retry_after" in got.errors[-1]["message"]
    [(_, tokens, at)] = app.store.jobs.rate_buckets()  # the claim's bucket: no hold put on it
    assert tokens == pytest.approx(9) and at <= T0


def test_a_long_retry_after_is_cut_to_the_setting_and_logged(
        make_app: Callable[..., App], caplog: pytest.LogCaptureFixture) -> None:
    """Finding 2: retry_after=1e10 held the task until the year 2343 on both engines;
    now the hold is cut to Settings.max_retry_after (an hour by default) and logged."""
    clock = FakeClock(T0)
    app = make_app(clock=clock, settings=Settings(**{**FAST.__dict__,
                                                     "max_retry_after": 600.0}))

    @app.task(rate_limit="100/s")
    def call_partner(ctx: JobContext) -> None:
        ctx.rate_limited(retry_after=1e10)

    first = call_partner.enqueue()
    with caplog.at_level(logging.WARNING, "shiftwork.flow"):
        drain(app, max_jobs=1)
    assert "cut to 600 seconds (Settings.max_retry_after)" in caplog.text
    job = app.get_job(first.id)
    assert job.state is JobState.SCHEDULED
    assert job.run_at is not None and job.run_at <= T0 + timedelta(seconds=601)
    flow = app.runtime.registry.claim_flow("default")
    clock.advance(599)
    assert claim(app.store, "default", 10, "w", 30, None, flow) == []  # still held
    clock.advance(2)
    assert [j.id for j in claim(app.store, "default", 10, "w", 30, None, flow)] \
        == [first.id]
    assert Settings().max_retry_after == 3600.0
    with pytest.raises(ConfigurationError, match="max_retry_after"):
        Settings(max_retry_after=math.inf)


def test_clear_backoff_ends_a_hold_by_api_and_by_command(
        clocked: tuple[App, FakeClock], db: dict[str, str], tmp_path: Path) -> None:
    """Finding 2: no command reset a held rate limit; app.clear_backoff and
    ``shiftwork queues clear-backoff`` end a task's or a queue's hold at once."""
    app, _ = clocked

    @app.task(name="partner", rate_limit="100/s")
    def partner(ctx: JobContext) -> None: ...

    app.queue("default", rate_limit="100/s")
    partner.enqueue()
    flow = app.runtime.registry.claim_flow("default")
    app.store.jobs.rate_limit_push_back("task:partner", 3000)
    assert claim(app.store, "default", 10, "w", 30, None, flow) == []
    assert app.clear_backoff("task:partner") is True
    assert len(claim(app.store, "default", 10, "w", 30, None, flow)) == 1
    assert app.clear_backoff("task:partner") is True  # the claim wrote a bucket again
    assert app.clear_backoff("task:partner") is False
    with pytest.raises(ConfigurationError, match="'task:<name>' or 'queue:<name>'"):
        app.clear_backoff("partner")

    app.store.jobs.rate_limit_push_back("queue:default", 3000)
    target = _write_app(tmp_path, "clearapp", "")
    out = _cli(db, tmp_path, "queues", "clear-backoff", "queue:default", "--app", target)
    assert out.returncode == 0, out.stderr
    assert "queue:default: cleared" in out.stdout
    assert all(key != "queue:default" for key, _, _ in app.store.jobs.rate_buckets())
    bad = _cli(db, tmp_path, "queues", "clear-backoff", "default", "--app", target)
    assert bad.returncode == 2 and "'task:<name>' or 'queue:<name>'" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_a_cleared_hold_frees_the_one_statement_claims_of_the_same_store(
        clocked: tuple[App, FakeClock]) -> None:
    """A queue whose only limit is one task's rate claims in one statement, after making
    the bucket once per store; clearing the hold must not leave that store without a
    bucket (it took nothing for the limit until a restart when clearing deleted it)."""
    app, _ = clocked

    @app.task(name="partner", rate_limit="100/s")
    def partner(ctx: JobContext) -> None: ...

    flow = app.runtime.registry.claim_flow("default")
    partner.enqueue()
    assert len(claim(app.store, "default", 10, "w", 30, None, flow)) == 1
    app.store.jobs.rate_limit_push_back("task:partner", 3000)
    partner.enqueue()
    assert claim(app.store, "default", 10, "w", 30, None, flow) == []
    assert app.clear_backoff("task:partner") is True
    assert len(claim(app.store, "default", 10, "w", 30, None, flow)) == 1
    assert all(key != "task:partner" or tokens < 100
               for key, tokens, _ in app.store.jobs.rate_buckets())


def test_queues_and_metrics_survive_a_stored_hold_out_of_range(
        app: App, db: dict[str, str], tmp_path: Path) -> None:
    """Finding 2: an infinite hold (SQLite) or one past year 9999 (PostgreSQL), stored by
    an earlier release, made ``shiftwork queues``, ``shiftwork metrics``, the dashboard's
    /metrics (500) and the worker's metrics port fail. Each now answers."""
    @app.task(name="partner", rate_limit="5/s")
    def partner() -> None: ...

    _store_hold(app, "task:partner")
    target = _write_app(tmp_path, "holdapp",
                        "@app.task(name='partner', rate_limit='5/s')\n"
                        "def partner() -> None: ...\n")
    for argv in (["queues"], ["metrics"]):
        out = _cli(db, tmp_path, *argv, "--app", target)
        assert out.returncode == 0, out.stderr
        assert "task:partner" in out.stdout
    with Served(create_dashboard(app, token=TOKEN)) as served, served.client() as c:
        page = c.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        assert page.status_code == 200, page.text
        assert 'shiftwork_rate_limit_tokens{limit="task:partner"} 0.0' in page.text
    with running_worker(app, {"default": 1}, metrics_port=0) as worker:
        from shiftwork.observe.worker import MetricsServer

        server = next(s for s in worker.services if isinstance(s, MetricsServer))
        scraped = httpx.get(f"http://127.0.0.1:{server.port}/metrics", timeout=10)
        assert scraped.status_code == 200
        assert 'limit="task:partner"' in scraped.text
    metrics = Metrics(app)
    try:
        assert b"task:partner" in metrics.exposition()
    finally:
        metrics.close()


@pytest.mark.parametrize("option, value, named", [
    ("delay", math.nan, "delay"), ("delay", math.inf, "delay"), ("delay", -1.0, "delay"),
    ("delay", 1e300, "delay"), ("delay", 10**400, "delay"), ("delay", "5", "delay"),
    ("run_at", datetime(9999, 12, 31, tzinfo=UTC), "run_at"),
    ("max_attempts", 0, "max_attempts"), ("max_attempts", 2**40, "max_attempts"),
    ("max_attempts", 1.5, "max_attempts"), ("max_attempts", True, "max_attempts"),
])
def test_enqueue_refuses_numbers_that_cannot_be_stored(app: App, option: str, value: Any,
                                                        named: str) -> None:
    """Finding 2: a NaN delay was accepted (as "now"), a huge delay or max_attempts gave
    an OverflowError or the driver's out-of-range error, max_attempts=0 fell back to the
    task's; each is refused with an error naming the parameter, and nothing is written."""
    @app.task(name="plain")
    def plain() -> None: ...

    with pytest.raises(ConfigurationError, match=named):
        plain.using(**{option: value}).enqueue()
    assert app.list_jobs() == []


@pytest.mark.parametrize("option, value", [
    ("timeout", math.nan), ("timeout", math.inf), ("max_attempts", 2**40)])
def test_task_options_are_checked_the_same_way(app: App, option: str, value: Any) -> None:
    """Finding 2: a task's options go through the same check: a NaN or infinite timeout
    and a max_attempts past the column were accepted (a zero or negative one, a priority
    out of range were refused before, and still are)."""
    with pytest.raises(ConfigurationError, match=option):
        app.task(name="t", **{option: value})(lambda: None)


@pytest.mark.parametrize("make", [
    lambda: RetryIn(math.nan), lambda: RetryIn(math.inf), lambda: RetryIn(-1),
    lambda: Snooze(math.inf), lambda: Snooze(until=datetime(2030, 1, 1)),
    lambda: Snooze(until=datetime.max.replace(tzinfo=UTC))])
def test_retry_in_and_snooze_refuse_numbers_that_cannot_be_stored(make: Callable[[], Any]
                                                                  ) -> None:
    """Finding 2: RetryIn(inf) and Snooze(inf) overflowed when the worker computed the
    next run (the job stayed running); both are refused where they are raised."""
    with pytest.raises(ConfigurationError, match=r"RetryIn|Snooze"):
        make()


def test_a_task_raising_a_bad_retry_in_fails_cleanly(clocked: tuple[App, FakeClock]) -> None:
    """Finding 2: the task's bad RetryIn becomes an ordinary failure naming it (retried on
    the task's backoff), not an OverflowError in the worker."""
    app, _ = clocked

    @app.task(name="picky", max_attempts=2)
    def picky() -> None:
        raise RetryIn(float("inf"), "partner said forever")

    job = picky.enqueue()
    drain(app, max_jobs=1)
    got = app.get_job(job.id)
    assert got.state is JobState.RETRYING
    assert "RetryIn: seconds must be a finite number" in got.errors[-1]["message"]


# -- finding 8: deeply nested JSON from people ------------------------------------------

DEEP = "[" * 5_000 + "]" * 5_000  # past the parser's recursion limit, under the form cap
TOO_DEEP = "nested more than 64 levels deep (Settings.max_json_depth)"


def test_deep_json_in_the_add_schedule_form_is_refused_with_the_payload_message(
        app: App) -> None:
    """Finding 8: deeply nested JSON in the dashboard's add-schedule form answered 500
    (RecursionError); it now answers with PayloadError's "nested too deep" message."""
    from urllib.parse import parse_qs, urlsplit

    from .test_security import csrf_of, login

    @app.task(name="report")
    def report(which: Any) -> None: ...

    with Served(create_dashboard(app, token=TOKEN)) as served, served.client() as c:
        login(c)
        for args in (DEEP, "[" + "[" * 70 + "]" * 70 + "]"):
            response = c.post("/schedules", data={
                "csrf": csrf_of(c), "name": "deep", "cron": "0 6 * * *", "task": "report",
                "args": args})
            assert response.status_code == 303, response.text
            message = parse_qs(urlsplit(response.headers["location"]).query)["msg"][0]
            assert TOO_DEEP in message and "not added" in message
    assert schedules_of(app.store).overview() == []  # nothing added


@pytest.mark.parametrize("argv", [
    ["enqueue", "report", "--args", DEEP],
    ["enqueue", "report", "--kwargs", '{"which": ' + DEEP + "}"],
    ["schedules", "add", "deep", "0 6 * * *", "report", "--args", DEEP]])
def test_deep_json_on_the_command_line_is_one_error_line(
        db: dict[str, str], tmp_path: Path, app: App, argv: list[str]) -> None:
    """Finding 8: ``shiftwork enqueue --args`` printed a RecursionError traceback; it (and
    ``schedules add``) now prints PayloadError's message and exits 2, nothing written."""
    target = _write_app(tmp_path, "deepapp",
                        "@app.task(name='report')\ndef report(which=None) -> None: ...\n")
    out = _cli(db, tmp_path, *argv, "--app", target)
    assert out.returncode == 2, out.stderr
    assert TOO_DEEP in out.stderr and "Traceback" not in out.stderr
    assert app.list_jobs() == []


# -- finding 9: event names, event keys and step names -----------------------------------


@pytest.fixture
def waiting(make_app: Callable[..., App]) -> tuple[App, int]:
    """A workflow suspended in a wait for the event "go"."""
    app = make_app(clock=FakeClock(T0))

    @app.workflow(name="waits")
    def waits(wf: Any) -> Any:
        return wf.wait_for_event("go")

    job = waits.enqueue()
    drain(app)
    assert app.get_job(job.id).state is JobState.SCHEDULED
    return app, job.id


@pytest.mark.parametrize("name, key, said", [
    ("e" * 20_000_000, None, "event name is 20000000 characters long, over the limit of 256"),
    ("go", "k" * 1_000_000, "key is 1000000 characters long, over the limit of 256"),
    ("g\x00o", None, "NUL"), ("go", "k\x00", "NUL"),
    ("g\ud800o", None, "unpaired surrogate"), ("go", "\udfff", "unpaired surrogate"),
    ("", None, "non-empty")])
def test_bad_event_names_and_keys_are_refused_before_any_write(
        waiting: tuple[App, int], name: str, key: str | None, said: str) -> None:
    """Finding 9: a 20 MB event name or a 1 MB key gave a raw StorageError, NUL psycopg's
    DataError, a lone surrogate UnicodeEncodeError; each is a PayloadError naming the
    limit, with nothing stored, and the workflow still takes a good event afterwards."""
    app, wf_id = waiting
    with pytest.raises(PayloadError, match=said) as caught:
        app.send_event(wf_id, name, {"x": 1}, key=key)
    assert len(str(caught.value)) < 300  # the message quotes the name cut short
    app.send_event(wf_id, "go", "ok", key="k1")
    drain(app)
    assert app.get_job(wf_id).result == "ok"


def test_events_to_a_job_that_is_not_a_workflow_are_refused(app: App) -> None:
    """Finding 9: an event sent to a plain job was stored and never consumed."""
    from shiftwork.workflow import WorkflowError

    @app.task(name="plain")
    def plain() -> None: ...

    job = plain.enqueue()
    with pytest.raises(WorkflowError, match="not a workflow"):
        app.send_event(job.id, "go", {"x": 1})
    count = app.store.transaction
    with count() as conn:
        table = "workflow_events" if app.store.engine == "sqlite" \
            else f"{app.schema}.workflow_events"
        assert conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0


@pytest.mark.parametrize("step, said", [
    ("s" * 5_000_000, "over the limit of 300"), ("a\x00b", "NUL"),
    ("a\udc00", "unpaired surrogate")])
def test_a_bad_step_name_stops_the_workflow_without_dooming_it(
        make_app: Callable[..., App], step: str, said: str) -> None:
    """Finding 9: a 5 MB or NUL step name failed the workflow for good (a raw storage
    error, compensations run); it now stops it as a code fault does: dead with a clear
    StepNameError, nothing recorded or compensated, and the fixed code takes it up again
    when the job is retried."""
    app = make_app(clock=FakeClock(T0))
    names = {"step": step}
    compensated: list[str] = []

    @app.workflow(name="named")
    def named(wf: Any) -> Any:
        wf.step("first", lambda: 1, compensate=lambda r: compensated.append("first"))
        return wf.step(names["step"], lambda: 2)

    job = named.enqueue()
    drain(app)
    got = app.get_job(job.id)
    assert got.state is JobState.DEAD
    assert got.errors[-1]["type"].endswith("StepNameError")
    assert said in got.errors[-1]["message"]
    assert compensated == [] and list(app.store.workflows.steps_get(job.id)) == ["first"]
    names["step"] = "second"  # the fix, deployed
    app.retry_job(job.id)
    drain(app)
    assert app.get_job(job.id).result == 2


# -- finding 10: the internal task shiftwork.workflow_call -------------------------------

CALL_TASK = "shiftwork.workflow_call"


def test_a_workflow_call_honours_its_tasks_limits_queue_and_name(
        make_app: Callable[..., App]) -> None:
    """Finding 10: through shiftwork.workflow_call, a task limited to 1/m with concurrency
    1 ran 5 times at once. Each call is now a job of its own task, in its queue, and
    the claim holds it to the task's rate limit and cap like any other job."""
    clock = FakeClock(T0)
    app = make_app(clock=clock)
    ran: list[int] = []

    @app.task(name="partner", queue="partners", rate_limit="1/m", concurrency=1)
    def partner(i: int) -> int:
        ran.append(i)
        return i * 10

    @app.workflow(name="fan")
    def fan(wf: Any) -> Any:
        return wf.parallel(*(wf.call(f"c{i}", partner, i) for i in range(5)))

    job = fan.enqueue()
    drain(app)
    assert len(ran) == 1  # one token: the other four wait for theirs
    calls = [j for j in app.list_jobs(limit=100) if j.id != job.id]
    assert {(j.task, j.queue) for j in calls} == {("partner", "partners")}
    for _ in range(4):
        clock.advance(61)
        drain(app)
    assert sorted(ran) == [0, 1, 2, 3, 4]
    assert app.get_job(job.id).result == [0, 10, 20, 30, 40]


def test_the_internal_task_is_never_offered_or_accepted(
        app: App, db: dict[str, str], tmp_path: Path) -> None:
    """Finding 10: the dashboard's add-schedule list offered shiftwork.workflow_call and
    enqueue / schedules.add accepted it, so anyone could run any task by name through
    it; it is now listed nowhere and refused by every way in."""
    from shiftwork.core.errors import UnknownTaskError

    from .test_security import login

    @app.task(name="secret")
    def secret() -> None: ...

    @app.workflow(name="flow")
    def flow(wf: Any) -> None: ...

    assert CALL_TASK in app.tasks
    for attempt in (lambda: app.enqueue(CALL_TASK, "secret", [], {}),
                    lambda: app.tasks[CALL_TASK].enqueue("secret", [], {}),
                    lambda: app.tasks[CALL_TASK].enqueue_many([("secret", [], {})]),
                    lambda: app.schedules.add("s", "* * * * *", CALL_TASK,
                                              ["secret", [], {}]),
                    lambda: app.schedules.add("s", "* * * * *",
                                              app.tasks[CALL_TASK].call("secret", [], {}))):
        with pytest.raises(UnknownTaskError, match="internal"):
            attempt()
    with pytest.raises(UnknownTaskError) as unknown:
        app.get_task("nope")
    assert CALL_TASK not in str(unknown.value)
    assert app.list_jobs() == [] and schedules_of(app.store).overview() == []
    with Served(create_dashboard(app, token=TOKEN)) as served, served.client() as c:
        login(c)
        page = c.get("/")
        assert page.status_code == 200 and "secret" in page.text
        assert CALL_TASK not in page.text
    target = _write_app(tmp_path, "callapp",
                        "@app.task(name='secret')\ndef secret() -> None: ...\n"
                        "@app.workflow(name='flow')\ndef flow(wf) -> None: ...\n")
    out = _cli(db, tmp_path, "enqueue", CALL_TASK, "--args", '["secret", [], {}]',
               "--app", target)
    assert out.returncode == 2 and "internal" in out.stderr, out.stderr
    assert app.list_jobs() == []
    assert app.task_names() == ["flow", "secret"]


def test_a_forged_workflow_call_job_runs_nothing(app: App) -> None:
    """Finding 10: a shiftwork.workflow_call job not enqueued by a workflow (written
    straight into the table, or by an older release's enqueue) ran its target; it now
    dies without running it."""
    from shiftwork.model.new_job import NewJob

    ran: list[str] = []

    @app.task(name="secret")
    def secret() -> None:
        ran.append("secret")

    @app.workflow(name="flow")
    def flow(wf: Any) -> None: ...

    forged = {"shiftwork.parent": {"workflow": 999, "event": "p/0", "of": 1}}
    rows = [NewJob(CALL_TASK, "default", '{"args":["secret",[],{}],"kwargs":{}}'),
            NewJob(CALL_TASK, "default", '{"args":["secret",[],{}],"kwargs":{}}',
                   meta_json=json.dumps(forged))]
    ids = [r.id for r in app.store.jobs.insert(rows)]
    drain(app)
    assert ran == []
    for job_id in ids:
        got = app.get_job(job_id)
        assert got.state is JobState.DEAD
        assert "runs only the calls a workflow enqueued" in got.errors[-1]["message"]


def test_a_call_enqueued_by_an_older_release_is_handed_to_its_own_task(
        make_app: Callable[..., App], monkeypatch: pytest.MonkeyPatch) -> None:
    """Finding 10: a shiftwork.workflow_call job an older release enqueued for a workflow
    ran its target inside itself, outside the target's limits; it now hands the call to a
    job of the target task (which the claim holds to its rate limit) and the parent gets
    the result from that job."""
    from shiftwork.model.new_job import NewJob
    from shiftwork.workflow import children

    def old_release_enqueue(wf: Any, step: str, members: list[Any]) -> list[int]:
        def enqueue(conn: Any) -> list[int]:
            rows = [NewJob(CALL_TASK, task.options.queue,
                           json.dumps({"args": [task.name, list(args), kwargs], "kwargs": {}}),
                           meta_json=json.dumps({children.PARENT_META: {
                               "workflow": wf.id, "event": f"{step}/{i}", "of": len(members)}}))
                    for i, (_label, task, args, kwargs) in enumerate(members)]
            return [int(r.id) for r in insert_rows(wf.runtime, rows, conn)]

        with wf.ctx.transaction() as tx:
            return [int(i) for i in tx.once(f"wf:{wf.id}:{step}", lambda: enqueue(tx.conn))]

    clock = FakeClock(T0)
    app = make_app(clock=clock)
    ran: list[int] = []

    @app.task(name="partner", queue="partners", rate_limit="1/m")
    def partner(i: int) -> int:
        ran.append(i)
        return i + 100

    @app.workflow(name="fan")
    def fan(wf: Any) -> Any:
        return wf.parallel(*(wf.call(f"c{i}", partner, i) for i in range(2)))

    monkeypatch.setattr(children, "_enqueue_once", old_release_enqueue)
    job = fan.enqueue()
    drain(app)
    assert len(ran) == 1  # the hand-offs are jobs of partner: one token, one start
    by_task = sorted((j.task, j.state.value) for j in app.list_jobs(limit=100)
                     if j.id != job.id)
    assert by_task.count((CALL_TASK, "succeeded")) == 2
    assert [t for t, _ in by_task].count("partner") == 2
    clock.advance(61)
    drain(app)
    assert app.get_job(job.id).result == [100, 101]


@pytest.mark.parametrize("make, named", [
    (lambda: Settings(lease_seconds=math.nan), "lease_seconds"),
    (lambda: Settings(heartbeat_interval=math.inf), "heartbeat_interval"),
    (lambda: Settings(effect_retention=1e300), "effect_retention"),
    (lambda: Settings(claim_batch=10**12), "claim_batch"),
    (lambda: RateLimit(math.inf), "n"),
    (lambda: RateLimit(10, per=math.nan), "per"),
    (lambda: RateLimit(10, burst=math.inf), "burst")])
def test_settings_and_rate_limits_refuse_numbers_that_cannot_be_stored(
        make: Callable[[], Any], named: str) -> None:
    """Finding 2: a NaN lease (sent to the database as an interval), an infinite rate or
    burst (stored in the buckets) were accepted; the same check now refuses them."""
    with pytest.raises(ConfigurationError, match=named):
        make()


def test_once_keep_and_list_limits_refuse_numbers_that_cannot_be_stored(
        app: App, db: dict[str, str], tmp_path: Path) -> None:
    """Finding 2: ``ctx.once(keep=inf)`` overflowed at the write, and a huge listing limit
    (``app.list_jobs``, ``shiftwork jobs list --limit``) gave the driver's error."""
    @app.task(name="keeper", max_attempts=1)
    def keeper(ctx: JobContext) -> None:
        ctx.once("k", lambda: 1, keep=math.inf)

    job = keeper.enqueue()
    drain(app)
    assert "once: keep must be a finite number" in app.get_job(job.id).errors[-1]["message"]
    with pytest.raises(ConfigurationError, match="limit"):
        app.list_jobs(limit=10**30)
    target = _write_app(tmp_path, "listapp", "")
    out = _cli(db, tmp_path, "jobs", "list", "--limit", str(10**30), "--app", target)
    assert out.returncode == 2 and "--limit" in out.stderr and "Traceback" not in out.stderr
