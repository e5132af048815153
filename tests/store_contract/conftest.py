"""A migrated store per test (a SQLite file or a Postgres schema) on a fake clock.

Migrating costs ~0.25 s a test on Postgres, so each engine is migrated once per session
into a template: SQLite tests get a copy of the template file, Postgres tests share the
template schema, emptied after each test.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from shiftwork import FakeClock
from shiftwork.store.base import Store
from shiftwork.store.connections import Connections
from shiftwork.store.open import open_store

from ..conftest import PARTITIONED, PG_DSN, pg_dsn_for, require_pg


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime.now(UTC).replace(microsecond=0))


def _connections(engine: str) -> Connections | None:
    """Behind PgBouncer: no prepared statements, LISTEN on the server itself."""
    return Connections(pgbouncer=True, listen_dsn=PG_DSN) if engine.endswith("pgbouncer") \
        else None


def _migrated(dsn: str, schema: str, partitioned: bool = False) -> None:
    template = open_store(dsn, schema=schema)
    try:
        template.migrate()
        template.debug_install_transition_guard()
        if (PARTITIONED or partitioned) and dsn.startswith("postgres"):
            template.partitions.convert(say=lambda _: None)  # type: ignore[attr-defined]
    finally:
        template.close()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("store_contract") / "template.db"
    _migrated(f"sqlite:///{path}", "shiftwork")
    return path


@pytest.fixture(scope="session")
def pg_template() -> Iterator[str]:
    require_pg()
    schema = f"t_contract_{uuid.uuid4().hex[:8]}"
    _migrated(PG_DSN, schema)
    yield schema
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture(scope="session")
def pg_partitioned_template() -> Iterator[str]:
    """The template schema with partitioned history (the engine postgres-partitioned)."""
    require_pg()
    schema = f"t_contract_p_{uuid.uuid4().hex[:8]}"
    _migrated(PG_DSN, schema, partitioned=True)
    yield schema
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _template(engine: str) -> str:
    return "pg_partitioned_template" if engine == "postgres-partitioned" else "pg_template"


def _empty_schema(schema: str) -> None:
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s "
            "AND table_type = 'BASE TABLE' "
            "AND table_name NOT IN ('schema_migrations', 'history_layout')", (schema,))]
        # DELETE, not TRUNCATE: on a few rows it is ten times faster. Replica mode
        # skips the foreign keys (and the transition guard) while emptying.
        with conn.transaction():
            conn.execute("SET LOCAL session_replication_role = replica")
            conn.execute("; ".join(f'DELETE FROM "{schema}"."{t}"' for t in tables).encode())


@pytest.fixture
def store(engine: str, clock: FakeClock, tmp_path: Path, request: pytest.FixtureRequest
          ) -> Iterator[Store]:
    if engine == "sqlite":
        path = tmp_path / "jobs.db"
        shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
        opened = open_store(f"sqlite:///{path}", clock=clock)
        yield opened
        opened.close()
        return
    schema = request.getfixturevalue(_template(engine))
    opened = open_store(pg_dsn_for(engine, request), clock=clock, schema=schema,
                        connections=_connections(engine))
    try:
        yield opened
    finally:
        opened.close()
        _empty_schema(schema)


@pytest.fixture
def other(store: Store, engine: str, tmp_path: Path, clock: FakeClock,
          request: pytest.FixtureRequest) -> Iterator[Store]:
    """A second store on the same database (another process, as far as the store knows)."""
    if engine == "sqlite":
        second = open_store(f"sqlite:///{tmp_path / 'jobs.db'}", clock=clock)
    else:
        second = open_store(pg_dsn_for(engine, request), clock=clock,
                            schema=request.getfixturevalue(_template(engine)),
                            connections=_connections(engine))
    yield second
    second.close()
