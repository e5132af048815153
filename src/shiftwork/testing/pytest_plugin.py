"""pytest fixtures for code built on shiftwork; pytest loads this plugin by itself (the
``pytest11`` entry point) once shiftwork is installed.

Fixtures: ``shiftwork_app`` (an App on a fresh database per test), ``shiftwork_clock`` (the
app's :class:`~shiftwork.FakeClock`), ``shiftwork_drain`` (run what is due),
``shiftwork_inline`` (run each job as it is enqueued) and ``assert_enqueued``.

Settings (``pytest.ini`` / ``[tool.pytest.ini_options]``):

- ``shiftwork_app = myapp:app``: the fixture is *your* App, its storage and clock swapped
  for the test's (and restored after). Unset: a new, empty App.
- ``shiftwork_dsn = postgresql://...``: run on PostgreSQL, in a fresh schema per test
  (dropped after). Unset: a fresh SQLite file in the test's temporary folder.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from shiftwork.app import App
from shiftwork.core.clock import FakeClock
from shiftwork.store import open_store
from shiftwork.testing import DrainResult, drain, inline
from shiftwork.testing import assert_enqueued as _assert_enqueued
from shiftwork.worker.loader import load_app


def pytest_addoption(parser: pytest.Parser) -> None:
    """Declare the plugin's ini settings."""
    parser.addini("shiftwork_app", "module:attr of the App the shiftwork_app fixture uses",
                  default="")
    parser.addini("shiftwork_dsn", "database for shiftwork_app (default: a temporary "
                  "SQLite file; postgresql://...: a fresh schema per test)", default="")


@pytest.fixture
def shiftwork_clock() -> FakeClock:
    """The test app's clock: moves only when told (``shiftwork_clock.advance(60)``)."""
    return FakeClock(datetime.now(UTC))


@pytest.fixture
def shiftwork_app(request: pytest.FixtureRequest, tmp_path: Path,
                  shiftwork_clock: FakeClock) -> Iterator[App]:
    """An App on a fresh, migrated database, with the fake clock."""
    dsn = str(request.config.getini("shiftwork_dsn")) or f"sqlite:///{tmp_path / 'jobs.db'}"
    schema = f"test_{uuid.uuid4().hex[:12]}" if not dsn.startswith("sqlite") else "shiftwork"
    spec = str(request.config.getini("shiftwork_app"))
    try:
        if spec:
            with rebound(load_app(spec), dsn, schema, shiftwork_clock) as app:
                yield app
        else:
            app = App(dsn, schema=schema, clock=shiftwork_clock)
            app.migrate()
            try:
                yield app
            finally:
                app.close()
    finally:
        if schema != "shiftwork":
            _drop_schema(dsn, schema)


@pytest.fixture
def shiftwork_drain(shiftwork_app: App) -> Callable[..., DrainResult]:
    """Run every due job of the test app here and now: ``shiftwork_drain()``."""
    return lambda **options: drain(shiftwork_app, **options)


@pytest.fixture
def shiftwork_inline(shiftwork_app: App) -> Iterator[DrainResult]:
    """Inside the test, every job the app enqueues runs at once (see ``testing.inline``)."""
    with inline(shiftwork_app) as ran:
        yield ran


@pytest.fixture
def assert_enqueued() -> Callable[..., Any]:
    """:func:`shiftwork.testing.assert_enqueued`: ``assert_enqueued(task, args=[7])``."""
    return _assert_enqueued


@contextmanager
def rebound(app: App, dsn: str, schema: str, clock: FakeClock) -> Iterator[App]:
    """``app`` with its storage and clock swapped for a test's, restored afterwards."""
    rt = app.runtime  # swapped in place: the App's tasks hold this Runtime
    saved = (app.dsn, app.schema, rt.dsn, rt.schema, rt.clock, rt._store, rt._ready)
    app.dsn = rt.dsn = dsn
    app.schema = rt.schema = schema
    rt.clock = clock
    rt._store = open_store(dsn, clock=clock, schema=schema, connections=rt.connections,
                           async_pool_size=app.async_pool_size)
    try:
        app.migrate()
        yield app
    finally:
        app.close()
        app.dsn, app.schema, rt.dsn, rt.schema, rt.clock, rt._store, rt._ready = saved


def _drop_schema(dsn: str, schema: str) -> None:
    import psycopg  # PostgreSQL runs only: the postgres extra is installed

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
