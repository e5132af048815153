"""PostgreSQL engine: SKIP LOCKED claims, LISTEN/NOTIFY wake-ups, leases on DB time."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from shiftwork.core.clock import Clock, SystemClock
from shiftwork.core.errors import (
    CommitUnknownError,
    ConfigurationError,
    StorageError,
)
from shiftwork.core.names import check_schema
from shiftwork.core.redact import describe_dsn, redact
from shiftwork.model.table_health import TableHealth
from shiftwork.store.connections import Connections, application_name
from shiftwork.store.console import JobsConsole
from shiftwork.store.deps import DepsSql
from shiftwork.store.postgres.async_pool import PostgresAsyncPool
from shiftwork.store.postgres.claims import PostgresClaims
from shiftwork.store.postgres.connect_errors import libpq_text, lost_reply, read_only, refusal
from shiftwork.store.postgres.deps import PostgresCascade
from shiftwork.store.postgres.fleet import PostgresFleet
from shiftwork.store.postgres.job_logs import PostgresJobLogs
from shiftwork.store.postgres.jobs import PostgresJobs
from shiftwork.store.postgres.long_jobs import PostgresLongJobs
from shiftwork.store.postgres.observe import PostgresObserve
from shiftwork.store.postgres.partitions import PostgresPartitions
from shiftwork.store.postgres.reconnect import reconnect_options
from shiftwork.store.postgres.reruns import PostgresReruns
from shiftwork.store.postgres.schedules import PostgresSchedules
from shiftwork.store.postgres.streams import PostgresStreams
from shiftwork.store.postgres.table_health import read_table_health
from shiftwork.store.postgres.wakeups import PostgresWakeListener
from shiftwork.store.postgres.workflows import PostgresWorkflows
from shiftwork.store.rows import aware, decoded, job_from_row, legal_pairs
from shiftwork.store.sealed import SealedRows
from shiftwork.store.sqlfile import load_all_queries, load_file, load_migrations

log = logging.getLogger("shiftwork.store.postgres")

NOTIFY_CHANNEL_PREFIX = "shiftwork_jobs_"
#: Finished jobs someone waits on (job.result()): a channel of their own, so the
#: workers' listeners are not woken by completions.
DONE_CHANNEL_PREFIX = "shiftwork_done_"


class PostgresStore(PostgresAsyncPool):
    """The PostgreSQL engine core (connections, named queries, clock: postgres/core.py)
    and its area drivers, built on it."""

    engine = "postgres"

    def __init__(self, dsn: str, schema: str = "shiftwork", clock: Clock | None = None,
                 pool_size: int = 10, connect_timeout: float = 5.0,
                 connections: Connections | None = None,
                 async_pool_size: int = 4) -> None:
        self.connections = connections or Connections(pool_size=pool_size)
        for what, value in (("DSN", dsn), ("listen DSN", self.connections.listen_dsn)):
            if value is None:
                continue
            try:
                psycopg.conninfo.conninfo_to_dict(value)
            except psycopg.ProgrammingError as exc:
                raise ConfigurationError(
                    f"bad PostgreSQL {what}: {redact(str(exc), fragments=True)}"
                ) from None  # the cause would quote the DSN again
        self.dsn = dsn
        # Server-side prepared statements do not survive a transaction pooler (PgBouncer
        # before 1.21 hands each transaction to any server connection).
        self._prepare: bool | None = None if self.connections.pgbouncer else True
        self.schema = check_schema(schema)
        self.clock = clock or SystemClock()
        self.channel = NOTIFY_CHANNEL_PREFIX + self.schema
        self.done_channel = DONE_CHANNEL_PREFIX + self.schema
        self.q: dict[str, str] = {}
        #: Whether the jobs table is partitioned (partitions.py): found on connecting.
        self.partitioned = False
        self._load_sql()
        self.async_pool_size = async_pool_size  # enqueue_async's pool (async_pool.py)
        self._connect_timeout = connect_timeout
        self._pool: ConnectionPool | None = None
        self._pool_lock = threading.Lock()
        #: The claim statements (which claim, and the limited ones' loops: flow/).
        self.claims = PostgresClaims(self)
        #: The worker registry and the leader lease.
        self.fleet = PostgresFleet(self)
        cascade = PostgresCascade(self)  # a finish resolves its dependents
        #: The jobs: insert, claim, complete, heartbeat, rescue, reads, rate buckets.
        self.jobs = PostgresJobs(self, cascade, self.fleet, self.claims)
        #: The dependency statements (the decisions are composition/settling.py's).
        self.deps = DepsSql(self, cascade, self.jobs)
        #: Long jobs: the fenced touch, paused queues, effect keys.
        self.long_jobs = PostgresLongJobs(self)
        #: The operations console's pages and bulk actions.
        self.console = JobsConsole(self, cascade)
        #: Payload columns for a key rotation (jobs/reencrypt.py).
        self.sealed = SealedRows(self)
        #: Counts, history and views for people and the leader.
        self.observe = PostgresObserve(self)
        #: What each job logged.
        self.job_logs = PostgresJobLogs(self)
        #: The durable workflows' statements.
        self.workflows = PostgresWorkflows(self)
        #: Workflow streams.
        self.streams = PostgresStreams(self)
        #: Forks and continue-as-new.
        self.reruns = PostgresReruns(self)
        #: The schedule statements (the transactions are schedules/firing.py's).
        self.schedules = PostgresSchedules(self)
        #: Partitioned history: the conversion and the partitions' upkeep.
        self.partitions = PostgresPartitions(self)

    def _load_sql(self) -> None:
        """The named queries and migrations, for the table layout found: ``{hot}`` names
        the table unfinished jobs live in (jobs, or jobs_hot with partitioned history), as
        the keyed inserts' ON CONFLICT needs their unique index, which only it holds. The
        dict is updated in place: the drivers hold it."""
        now = "coalesce(%(now)s::timestamptz, now())"
        self.q.clear()
        self.q.update(load_all_queries(__package__ or "", now=now, **self._names()))
        self._migrations = load_migrations(f"{__package__}.migrations", **self._names())

    def _names(self) -> dict[str, str]:
        """``{schema}`` and ``{hot}`` of the SQL files, for the layout in use."""
        quoted = f'"{self.schema}"'
        return {"schema": quoted,
                "hot": f"{quoted}.jobs_hot" if self.partitioned else f"{quoted}.jobs"}

    def functions_sql(self) -> str:
        """migrations/functions.sql for the layout in use (CREATE OR REPLACE only)."""
        return load_file(f"{__package__}.migrations", "functions.sql", **self._names())

    def use_layout(self, partitioned: bool) -> None:
        """Use the statements for this layout (after a conversion, or on finding it)."""
        if partitioned != self.partitioned:
            self.partitioned = partitioned
            self._load_sql()

    def find_layout(self, c: psycopg.Connection[Any]) -> bool:
        """Look the layout up on ``c`` and use it; whether the history is partitioned."""
        row = c.execute("SELECT to_regclass(%s) IS NOT NULL",
                        (f'"{self.schema}".history_layout',)).fetchone()
        self.use_layout(bool(row and row[0]))
        return self.partitioned

    # -- connections -----------------------------------------------------------

    @property
    def pool(self) -> ConnectionPool:
        if self._pool is None:
            with self._pool_lock:
                if self._pool is None:
                    # One direct connection first: it fails fast, with the server's own reason.
                    try:
                        psycopg.connect(self.dsn, **self._connect_kwargs()).close()
                    except psycopg.Error as exc:
                        # A missing database or a refused login fails now; an outage
                        # (StorageError) is retried by the worker.
                        refused = refusal(str(exc), describe_dsn(self.dsn))
                        if refused is not None:
                            raise refused from None
                        raise StorageError(f"cannot connect to PostgreSQL at "
                                           f"{describe_dsn(self.dsn)}: {libpq_text(exc)}"
                                           ) from exc
                    plan = self.connections
                    pool = ConnectionPool(
                        self.dsn, min_size=plan.pool_min_size, max_size=plan.pool_size,
                        max_idle=plan.pool_max_idle, open=False,
                        kwargs={"autocommit": True, **self._connect_kwargs()},
                        timeout=self._connect_timeout + 5, name="shiftwork",
                        **reconnect_options(),
                    )
                    try:
                        pool.open(wait=True, timeout=self._connect_timeout + 1)
                    except Exception as exc:
                        pool.close()
                        raise StorageError(
                            f"cannot connect to PostgreSQL at {describe_dsn(self.dsn)}: "
                            f"{libpq_text(exc)}"
                        ) from exc
                    self._pool = pool
                    with pool.connection() as c:
                        self.find_layout(c)
        return self._pool

    def _connect_kwargs(self, dsn: str | None = None, role: str = "") -> dict[str, Any]:
        """Connection options: the timeout, no prepared statements behind PgBouncer, and an
        application_name per process unless the DSN or PGAPPNAME names one."""
        kwargs: dict[str, Any] = {"connect_timeout": int(self._connect_timeout)}
        if self.connections.pgbouncer:
            kwargs["prepare_threshold"] = None
        if ("application_name" not in psycopg.conninfo.conninfo_to_dict(dsn or self.dsn)
                and "PGAPPNAME" not in os.environ):
            kwargs["application_name"] = application_name(role)
        return kwargs

    @contextmanager
    def _conn(self, conn: Any = None) -> Iterator[psycopg.Connection[Any]]:
        if conn is not None:
            yield conn
            return
        try:
            with self.pool.connection() as c:
                try:
                    yield c
                except psycopg.OperationalError as exc:
                    if c.broken:  # sent, and the reply never came: it may have committed
                        raise lost_reply(describe_dsn(self.dsn), exc) from exc
                    raise
                except psycopg.errors.ReadOnlySqlTransaction as exc:
                    c.close()  # a standby: the pool discards it and connects anew
                    raise read_only(describe_dsn(self.dsn), exc) from exc
        except CommitUnknownError:
            raise
        except psycopg.OperationalError as exc:
            # Also 40001 (SerializationFailure is an OperationalError): with partitioned
            # history, a statement that waited on a row another moved between partitions
            # (a heartbeat behind a completion) fails rather than following it. Transient,
            # as an outage is: callers retry, and a fenced retry then matches no row.
            raise StorageError(f"PostgreSQL at {describe_dsn(self.dsn)}: {exc}") from exc

    def _p(self, **params: Any) -> dict[str, Any]:
        params["now"] = self.clock.db_now()
        return params

    # -- the core's primitives for the drivers (../core.py, core.py) -------------------------

    _unique_violation = psycopg.errors.UniqueViolation

    def _session(self, conn: Any = None) -> AbstractContextManager[psycopg.Connection[Any]]:
        return self._conn(conn)

    def _one(self, c: psycopg.Connection[Any], query: str, **params: Any) -> Any:
        cur = c.execute(self.q[query], self._p(**params))
        return cur.fetchone() if cur.description else None

    def _notify(self, c: psycopg.Connection[Any], queues: list[str]) -> None:
        c.execute(self.q["jobs_notify"], {"channel": self.channel, "queues": queues})

    def _rows(self, c: psycopg.Connection[Any], query: str, **params: Any) -> list[Any]:
        cur = c.execute(self.q[query], self._p(channel=self.channel,
                                               done_channel=self.done_channel, **params))
        return cur.fetchall() if cur.description else []

    def _instant(self, value: Any) -> datetime | None:
        return aware(value)

    def _reader(self) -> AbstractContextManager[psycopg.Connection[Any]]:
        return self._conn()

    def wakeups_listen(self, topic: str = "jobs") -> PostgresWakeListener | None:
        """LISTEN on a dedicated autocommit connection (not from the pool), to
        ``listen_dsn`` if set; ``topic`` "done": finished jobs someone waits on, instead of
        queues with work. None behind PgBouncer without a listen DSN: LISTEN through a
        transaction pooler hears nothing, so callers poll."""
        if not self.connections.listens:
            return None
        dsn = self.connections.listen_dsn or self.dsn
        try:
            conn = psycopg.connect(dsn, autocommit=True, **self._connect_kwargs(dsn, "listen"))
            return PostgresWakeListener(
                conn, self.done_channel if topic == "done" else self.channel)
        except psycopg.Error as exc:
            raise StorageError(f"cannot LISTEN on PostgreSQL at {describe_dsn(dsn)}: "
                               f"{exc}".strip()) from exc

    def connection_budget(self) -> int:
        """The most connections this store holds at once: both pools, full."""
        return self.connections.pool_size + self.async_pool_size

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def ping(self) -> None:
        with self._conn() as c:
            c.execute("SELECT 1")

    def db_now(self) -> datetime:
        with self._conn() as c:
            row = c.execute(self.q["db_now"], self._p()).fetchone()
            assert row is not None
            return aware(row[0])  # type: ignore[return-value]

    def table_health(self) -> TableHealth:
        with self._conn() as c:
            # jobs_hot's once partitioned (perhaps by another process since this connected)
            return read_table_health(c, self.q, self.find_layout(c))

    # -- schema ------------------------------------------------------------------------

    def migrate(self) -> list[int]:
        applied: list[int] = []
        with self._conn() as c, c.transaction():
            # One migrator at a time across the fleet.
            c.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                      (f"shiftwork.migrate.{self.schema}",))
            c.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self.schema)))
            c.execute(sql.SQL(
                "CREATE TABLE IF NOT EXISTS {}.schema_migrations (version int PRIMARY KEY, "
                "name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
            ).format(sql.Identifier(self.schema)))
            done = {r[0] for r in c.execute(sql.SQL("SELECT version FROM {}.schema_migrations")
                                            .format(sql.Identifier(self.schema)))}
            for version, name, text in self._migrations:
                if version in done:
                    continue
                c.execute(text.encode())
                c.execute(sql.SQL("INSERT INTO {}.schema_migrations (version, name) "
                                  "VALUES (%s, %s)").format(sql.Identifier(self.schema)),
                          (version, name))
                applied.append(version)
        return applied

    def schema_latest(self) -> int:
        return max(version for version, _, _ in self._migrations)

    def schema_version(self) -> int:
        with self._conn() as c:
            try:
                row = c.execute(sql.SQL("SELECT max(version) FROM {}.schema_migrations")
                                .format(sql.Identifier(self.schema))).fetchone()
            except psycopg.errors.UndefinedTable:
                return 0
            return int(row[0] or 0) if row else 0

    def drop_schema(self) -> None:
        with self._conn() as c:
            c.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE")
                      .format(sql.Identifier(self.schema)))

    def _read(self, sql: str, params: dict[str, Any], jobs: bool = False) -> list[Any]:
        """Rows of ``sql`` (a console or observe query), as jobs with ``jobs``."""
        with self._conn() as c:
            cur = c.cursor(row_factory=dict_row) if jobs else c.cursor()
            rows = cur.execute(sql, self._p(**params)).fetchall()
        return [job_from_row(r, aware, decoded) for r in rows] if jobs else rows

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection inside a transaction: commits on exit, rolls back on error."""
        with self._conn() as c, c.transaction():
            yield c

    # -- test support ---------------------------------------------------------------

    def debug_install_transition_guard(self) -> None:
        pairs = ", ".join(f"('{a}', '{b}')" for a, b in legal_pairs())
        s = f'"{self.schema}"'
        with self._conn() as c:  # partitioned: on jobs_hot, where every live row is
            table = f"{s}.jobs_hot" if self.find_layout(c) else f"{s}.jobs"
        body = f"""
        CREATE OR REPLACE FUNCTION {s}.shiftwork_transition_guard() RETURNS trigger AS $$
        BEGIN
          IF TG_OP = 'INSERT' THEN
            IF NEW.state NOT IN ('available', 'scheduled') THEN
              RAISE EXCEPTION 'illegal initial state %', NEW.state;
            END IF;
          ELSIF OLD.state <> NEW.state AND (OLD.state, NEW.state) NOT IN ({pairs}) THEN
            RAISE EXCEPTION 'illegal transition % -> % (job %)', OLD.state, NEW.state, OLD.id;
          END IF;
          RETURN NEW;
        END $$ LANGUAGE plpgsql;
        DROP TRIGGER IF EXISTS transition_guard ON {table};
        CREATE TRIGGER transition_guard BEFORE INSERT OR UPDATE OF state ON {table}
          FOR EACH ROW EXECUTE FUNCTION {s}.shiftwork_transition_guard();
        """
        with self._conn() as c:
            c.execute(body.encode())

