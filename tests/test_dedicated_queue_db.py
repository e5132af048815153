"""A dedicated queue database (docs/deploy.md): the App's jobs in a database of their own
on the same server, beside the application's; a real worker process runs them; the
application's writes reach the queue through an outbox, since an enqueue can no longer
join the application's transaction."""

from __future__ import annotations

import signal
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from shiftwork import App, JobState

from .conftest import PG_DSN, require_pg, spawn_worker, wait_for


@pytest.fixture
def queue_dsn() -> Iterator[str]:
    """A second database on the test server, dropped after."""
    require_pg()
    name = f"shiftwork_queue_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_DSN, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    info = psycopg.conninfo.conninfo_to_dict(PG_DSN)
    info["dbname"] = name
    try:
        yield psycopg.conninfo.make_conninfo(**info)  # type: ignore[arg-type]
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as c:
            c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def app_schema() -> Iterator[str]:
    """The application's own tables (orders, and its outbox) in the test database."""
    require_pg()
    schema = f"shop_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_DSN, autocommit=True) as c:
        c.execute(f'CREATE SCHEMA "{schema}"')
        c.execute(f'CREATE TABLE "{schema}".orders (id bigint PRIMARY KEY, '
                  "shipped int NOT NULL DEFAULT 0)")
        c.execute(f'CREATE TABLE "{schema}".outbox (id bigserial PRIMARY KEY, '
                  "order_id bigint NOT NULL)")
    try:
        yield schema
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as c:
            c.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def place_order(schema: str, order_id: int, commit: bool = True) -> None:
    """The application's write and its outbox row: one transaction of its database."""
    with psycopg.connect(PG_DSN) as c:
        c.execute(f'INSERT INTO "{schema}".orders (id) VALUES (%s)', (order_id,))
        c.execute(f'INSERT INTO "{schema}".outbox (order_id) VALUES (%s)', (order_id,))
        if not commit:
            c.rollback()


def relay(queue: App, schema: str, delete: bool = True) -> list[int]:
    """Move the outbox's rows into the queue: each enqueued under the row's key, so a
    relay that enqueued a row and crashed before deleting it does not add a second job
    while the first is still waiting or running."""
    ship = queue.tasks["tests.apps.queue_db.ship"]
    ids = []
    with psycopg.connect(PG_DSN) as c:
        rows = c.execute(f'SELECT id, order_id FROM "{schema}".outbox ORDER BY id '
                         "FOR UPDATE SKIP LOCKED LIMIT 100").fetchall()
        for outbox_id, order_id in rows:
            ids.append(ship.using(key=f"outbox:{outbox_id}").enqueue(order_id).id)
        if delete:
            c.execute(f'DELETE FROM "{schema}".outbox WHERE id = ANY(%s)',
                      ([r[0] for r in rows],))
    return ids


def _shipped(schema: str) -> dict[int, int]:
    with psycopg.connect(PG_DSN) as c:
        return dict(c.execute(f'SELECT id, shipped FROM "{schema}".orders').fetchall())


def test_a_worker_runs_jobs_from_a_queue_database_of_their_own(
        queue_dsn: str, app_schema: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHIFTWORK_TEST_DSN", queue_dsn)
    monkeypatch.setenv("SHIFTWORK_TEST_APP_DSN", PG_DSN)
    monkeypatch.setenv("SHIFTWORK_TEST_APP_SCHEMA", app_schema)
    from tests.apps.queue_db import app as queue

    queue.migrate()
    place_order(app_schema, 1)
    place_order(app_schema, 2, commit=False)  # rolled back: its outbox row goes with it
    first = relay(queue, app_schema, delete=False)  # "crashes" before deleting its rows
    again = relay(queue, app_schema)  # the next pass: the same job, not a second one
    assert first == again and len(first) == 1

    env: dict[str, Any] = {"SHIFTWORK_TEST_APP_DSN": PG_DSN,
                           "SHIFTWORK_TEST_APP_SCHEMA": app_schema}
    worker = spawn_worker({"dsn": queue_dsn, "schema": "shiftwork"}, "queue_db", ["orders"],
                          env=env)
    try:
        wait_for(lambda: queue.get_job(first[0]).state == JobState.SUCCEEDED, timeout=60,
                 what="the worker to run the job")
        assert _shipped(app_schema) == {1: 1}
        # The queue's tables are in the queue database only: the application's has none.
        with psycopg.connect(PG_DSN) as c:
            assert c.execute("SELECT to_regclass(%s)", (f'"{app_schema}".jobs',)
                             ).fetchone() == (None,)
        with psycopg.connect(queue_dsn) as c:
            assert c.execute("SELECT count(*) FROM shiftwork.jobs").fetchone() == (1,)
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(60)
        queue.close()
    assert worker.returncode == 0
