"""Enqueue from SQL (PostgreSQL, migration 0029; docs/integrations.md): the function
``<schema>.enqueue``, the task options it reads from ``task_defaults``, its wake-ups, its
errors, and a trigger whose jobs a real worker process runs."""

from __future__ import annotations

import json
import re
import signal
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from shiftwork import App, JobState
from shiftwork.store.wakeups import parse_wakeup

from .conftest import (
    PG_DSN,
    apps_on,
    imported_app,
    running_worker,
    spawn_worker,
    wait_for,
)


@pytest.fixture
def schema(pg_schema: str) -> str:
    return pg_schema


@pytest.fixture
def make(schema: str) -> Iterator[Callable[..., App]]:
    with apps_on(PG_DSN, schema) as make:
        yield make


def declare(app: App) -> None:
    @app.task(name="mail.send", queue="mail", priority=5, max_attempts=3, timeout=9.5)
    def send(to: str, subject: str = "") -> None: ...


@pytest.fixture
def mail_app(make: Callable[..., App]) -> App:
    """An app whose one task has options of its own, migrated (which registers them)."""
    app = make()
    declare(app)
    app.migrate()  # nothing left to apply: writes the task's options to task_defaults
    return app


@pytest.fixture
def sql(schema: str) -> Iterator[Callable[..., Any]]:
    """Run one statement on a connection of its own (autocommit): its first row."""
    conn = psycopg.connect(PG_DSN, autocommit=True)

    def run(statement: str, *params: Any) -> Any:
        row = conn.execute(statement.replace("{s}", f'"{schema}"'), params or None).fetchone()
        return row[0] if row is not None and len(row) == 1 else row

    run.conn = conn  # type: ignore[attr-defined]
    yield run
    conn.close()


def test_a_task_options_come_from_its_registered_defaults(mail_app: App, sql: Any) -> None:
    job_id = sql("SELECT {s}.enqueue('mail.send', '[\"a@example.com\"]', "
                 "kwargs => '{\"subject\": \"hi\"}')")
    job = mail_app.get_job(job_id)
    assert (job.task, job.queue, job.state, job.priority, job.max_attempts, job.timeout) == (
        "mail.send", "mail", JobState.AVAILABLE, 5, 3, 9.5)
    assert (job.args, job.kwargs) == (["a@example.com"], {"subject": "hi"})
    assert job.meta == {} and job.unique_key is None and job.attempt == 0


def test_the_call_overrides_queue_priority_and_run_at(mail_app: App, sql: Any) -> None:
    later = datetime.now(UTC) + timedelta(hours=1)
    job_id = sql("SELECT {s}.enqueue('mail.send', queue => 'mail-bulk', priority => -3, "
                 "run_at => %s)", later)
    job = mail_app.get_job(job_id)
    assert (job.queue, job.priority, job.state, job.run_at) == (
        "mail-bulk", -3, JobState.SCHEDULED, later)
    past = sql("SELECT {s}.enqueue('mail.send', run_at => now() - interval '1 minute')")
    assert mail_app.get_job(past).state is JobState.AVAILABLE


def test_a_due_job_wakes_one_share_a_delayed_one_no_one(mail_app: App, sql: Any,
                                                        schema: str) -> None:
    with psycopg.connect(PG_DSN, autocommit=True) as listener:
        listener.execute(f'LISTEN "shiftwork_jobs_{schema}"')
        sql("SELECT {s}.enqueue('mail.send', run_at => now() + interval '1 hour')")
        sql("SELECT {s}.enqueue('mail.send')")
        payloads = [n.payload for n in listener.notifies(timeout=1.0)]
    assert len(payloads) == 1, payloads  # the delayed job: the producers' next-due wait
    assert re.fullmatch(r"mail\|1\|\d+", payloads[0])
    queue, count, _token = parse_wakeup(payloads[0])
    assert (queue, count) == ("mail", 1)


def test_a_worker_runs_a_job_enqueued_from_sql(mail_app: App, sql: Any) -> None:
    with running_worker(mail_app, {"mail": 1}):
        job_id = sql("SELECT {s}.enqueue('mail.send', '[\"b@example.com\"]')")
        wait_for(lambda: mail_app.get_job(job_id).state is JobState.SUCCEEDED,
                 what="the SQL job to run")


def test_a_taken_unique_key_returns_the_job_holding_it(mail_app: App, sql: Any) -> None:
    send = mail_app.tasks["mail.send"]
    from_python = send.using(key="order-7").enqueue("c@example.com").id
    # The same key from SQL: the same job (keys are the task's name and the key, both ways).
    assert sql("SELECT {s}.enqueue('mail.send', unique_key => 'order-7')") == from_python
    other = sql("SELECT {s}.enqueue('mail.send', unique_key => 'order-8')")
    assert other != from_python
    assert sql("SELECT {s}.enqueue('mail.send', unique_key => 'order-8')") == other
    mail_app.cancel_job(other)  # a finished job frees its key
    assert sql("SELECT {s}.enqueue('mail.send', unique_key => 'order-8')") > other


def test_an_unknown_task_is_refused_unless_the_queue_is_named(mail_app: App,
                                                              sql: Any) -> None:
    with pytest.raises(psycopg.Error) as caught:
        sql("SELECT {s}.enqueue('send')")
    assert caught.value.sqlstate == "SW001"
    message = str(caught.value)
    assert 'unknown task "send": no worker or migrate has registered it' in message
    assert "did you mean mail.send?" in message and "known: mail.send" in message
    # Named with its queue, it waits like any job of a task no worker knows (yet).
    job = mail_app.get_job(sql("SELECT {s}.enqueue('billing.charge', queue => 'billing')"))
    assert (job.task, job.queue, job.state, job.max_attempts, job.priority) == (
        "billing.charge", "billing", JobState.AVAILABLE, 20, 0)
    # A worker serving the queue that does not know the task passes the job over, unrun.
    with running_worker(mail_app, {"billing": 1}):
        wait_for(lambda: mail_app.get_job(job.id).errors, what="the job passed over")
    job = mail_app.get_job(job.id)
    assert job.state is JobState.AVAILABLE and job.counted_attempt == 0
    assert [e["kind"] for e in job.errors] == ["unknown_task"]


@pytest.mark.parametrize("call, sqlstate, says", [
    ("'mail.send', queue => 'bad queue'", "SW002", 'bad queue name "bad queue"'),
    ("'mail.send', queue => ''", "SW002", 'bad queue name ""'),
    ("'mail.send', queue => 'café'", "SW002", 'bad queue name "café"'),
    ("'mail.send', queue => repeat('q', 64)", "SW002", "use 1-63 characters"),
    ("E'mail\\nsend'", "SW002", 'bad task name "mail\\nsend"'),
    ("'x''); DROP TABLE jobs; --'", "SW002", "bad task name \"x'); DROP TABLE jobs; --\""),
    ("E'\\u202Email.send'", "SW002", "bad task name"),
    ("NULL", "SW002", "bad task name NULL"),
    ("'mail.send', '{}'", "SW003", "args must be a JSON array, not object"),
    ("'mail.send', '\"x\"'", "SW003", "args must be a JSON array, not string"),
    ("'mail.send', NULL", "SW003", "args must be a JSON array, not NULL"),
    ("'mail.send', kwargs => '[]'", "SW003", "kwargs must be a JSON object, not array"),
    ("'mail.send', jsonb_build_array(repeat('x', 300000))", "SW003",
     "over the 262144-byte limit (the default Settings.max_args_bytes)"),
    ("'mail.send', (repeat('[', 65) || repeat(']', 65))::jsonb", "SW003",
     "nested more than 64 levels deep"),
    ("'mail.send', kwargs => jsonb_build_object('n', (repeat('9', 4300))::numeric)", "SW003",
     "a number over 14,000 bits"),
    ("'mail.send', jsonb_build_array(-(repeat('9', 4300))::numeric)", "SW003",
     "store it as a string"),
    ("'mail.send', priority => 101", "SW004", "priority must be from -100 to 100, not 101"),
    ("'mail.send', run_at => 'infinity'", "SW004", "run_at must be a finite instant"),
    ("'mail.send', run_at => '-infinity'", "SW004", "not -infinity"),
    ("'mail.send', run_at => '9999-06-01 00:00+00'", "SW004", "before 9999-01-01"),
    ("'mail.send', run_at => '0044-03-15 00:00+00 BC'", "SW004", "from year 1"),
    ("'mail.send', unique_key => repeat('k', 1100)", "SW004",
     "unique key of 1110 bytes, over the 1024-byte limit"),
])
def test_bad_input_is_refused_with_a_clear_error(mail_app: App, sql: Any, call: str,
                                                 sqlstate: str, says: str) -> None:
    with pytest.raises(psycopg.Error) as caught:
        sql(f"SELECT {{s}}.enqueue({call})")
    assert caught.value.sqlstate == sqlstate, caught.value
    assert says in str(caught.value)
    assert sql("SELECT count(*) FROM {s}.jobs") == 0


def test_what_python_accepts_sql_accepts(mail_app: App, sql: Any) -> None:
    """The bounds are Python's own: the deepest and largest arguments it stores pass."""
    deep: Any = 1
    for _ in range(63):  # an argument at depth 1, containers down to depth 63
        deep = [deep]
    big = 2 ** 13_999
    send = mail_app.tasks["mail.send"]
    send.enqueue(deep)  # Python takes them...
    send.enqueue(str(big), subject=big)  # type: ignore[arg-type]
    job_id = sql("SELECT {s}.enqueue('mail.send', jsonb_build_array(%s::jsonb), "
                 "kwargs => jsonb_build_object('subject', %s::numeric))",
                 json.dumps(deep), str(big))
    job = mail_app.get_job(job_id)  # ...and so does SQL, and the job reads back
    assert job.args == [deep] and job.kwargs == {"subject": big}


def test_a_starting_worker_registers_its_release_options(make: Callable[..., App],
                                                         schema: str, sql: Any) -> None:
    old = App(PG_DSN, schema=schema)
    declare(old)
    old.migrate()
    new = App(PG_DSN, schema=schema)  # the next release moved the task, without a migrate

    @new.task(name="mail.send", queue="mail-v2", max_attempts=7)
    def send(to: str) -> None: ...

    try:
        with running_worker(new, {"mail-v2": 1}):
            pass
        row = sql("SELECT queue, priority, max_attempts, timeout FROM {s}.task_defaults "
                  "WHERE name = 'mail.send'")
        assert row == ("mail-v2", 0, 7, None)
        assert new.get_job(sql("SELECT {s}.enqueue('mail.send')")).queue == "mail-v2"
        # Internal tasks (the workflow runner's) are not for SQL producers.
        assert sql("SELECT count(*) FROM {s}.task_defaults") == 1
    finally:
        old.close()
        new.close()


ORDERS = """
CREATE TABLE {s}.orders (id bigint PRIMARY KEY, email text NOT NULL);
CREATE FUNCTION {s}.orders_enqueue_receipt() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM {s}.enqueue('send_receipt', jsonb_build_array(NEW.id));
    RETURN NULL;
END $$;
CREATE TRIGGER orders_receipt AFTER INSERT ON {s}.orders
    FOR EACH ROW EXECUTE FUNCTION {s}.orders_enqueue_receipt();
"""


def succeeded(app: App, n: int) -> list[Any]:
    """The app's jobs once there are ``n``, all succeeded (else [])."""
    jobs = app.list_jobs()
    return jobs if len(jobs) == n and all(j.state is JobState.SUCCEEDED for j in jobs) else []


def test_a_trigger_enqueues_what_commits_and_a_worker_process_runs_it(
        schema: str, sql: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    db = {"dsn": PG_DSN, "schema": schema}
    with imported_app(monkeypatch, "outbox", PG_DSN, schema) as outbox:  # migrate registers
        sql.conn.execute(ORDERS.replace("{s}", f'"{schema}"'))
        proc = spawn_worker(db, "outbox", ["receipts"])
        try:
            wait_for(lambda: outbox.app.store.fleet.workers_list(), what="the worker to register")
            with psycopg.connect(PG_DSN) as c:  # one transaction, committed
                for order_id in (1, 2):
                    c.execute(f'INSERT INTO "{schema}".orders VALUES (%s, %s)',
                              (order_id, f"{order_id}@example.com"))
            committed = time.monotonic()
            with psycopg.connect(PG_DSN) as c:  # rolled back: its job never existed
                c.execute(f'INSERT INTO "{schema}".orders VALUES (3, %s)', ("3@example.com",))
                c.rollback()
            jobs = wait_for(lambda: succeeded(outbox.app, 2), what="the receipts to be sent")
            latency = time.monotonic() - committed
            assert sorted(j.args[0] for j in jobs) == [1, 2]
            assert {j.result["pid"] for j in jobs} == {proc.pid}  # type: ignore[index]
            assert all(j.queue == "receipts" and j.max_attempts == 4 for j in jobs)
            # Woken, not polled: the worker polls every 30 s.
            assert latency < 15, f"{latency:.1f}s: the worker was not woken"
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(30) == 0


def test_the_known_tasks_listed_are_bounded(make: Callable[..., App], sql: Any) -> None:
    app = make()
    for i in range(60):
        app.task(name=f"t{i:02}")(lambda: None)
    app.migrate()
    with pytest.raises(psycopg.Error) as caught:
        sql("SELECT {s}.enqueue('t99')")
    message = str(caught.value).splitlines()[0]
    assert message.endswith("known: " + ", ".join(f"t{i:02}" for i in range(50)) + ", ...")


def test_a_raw_insert_of_unreadable_arguments_is_refused(make: Callable[..., App],
                                                         schema: str) -> None:
    """Arguments that are not {"args": [...], "kwargs": {...}} made the job unreadable and
    its claim fail every time (the queue stalled): Postgres refuses the insert now."""
    app = make()
    app.migrate()
    columns = "(task, queue, args, state, run_at, created_at, max_attempts)"
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        for bad in ('[1]', '{"args": 7}', '{"args": [], "kwargs": []}', '"x"'):
            with pytest.raises(psycopg.errors.CheckViolation, match="jobs_args_shape"):
                conn.execute(f'INSERT INTO "{schema}".jobs {columns} VALUES '
                             "('t', 'default', %s::jsonb, 'available', now(), now(), 1)",
                             (bad,))
        conn.execute(f'INSERT INTO "{schema}".jobs {columns} VALUES '
                     """('t', 'default', '{"args": [1]}', 'available', now(), now(), 1)""")
    assert [j.args for j in app.list_jobs()] == [[1]]  # readable, kwargs left out
