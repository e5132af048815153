"""SQLite engine: WAL mode, durable commits, BEGIN IMMEDIATE claims, one host."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading

# Real time, not the runtime's clock: the busy timeout bounds real sleeps.
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from datetime import datetime
from typing import Any

from shiftwork.core.clock import Clock, SystemClock
from shiftwork.core.errors import ConfigurationError, StorageError
from shiftwork.model.table_health import TableHealth
from shiftwork.store.console import JobsConsole
from shiftwork.store.deps import DepsSql
from shiftwork.store.rows import from_ts, job_from_row, legal_pairs, loads
from shiftwork.store.sealed import SealedRows
from shiftwork.store.sqlfile import load_all_queries, load_migrations
from shiftwork.store.sqlite.claims import SQLiteClaims
from shiftwork.store.sqlite.deps import SQLiteCascade
from shiftwork.store.sqlite.fleet import SQLiteFleet
from shiftwork.store.sqlite.job_logs import SQLiteJobLogs
from shiftwork.store.sqlite.jobs import SQLiteJobs
from shiftwork.store.sqlite.long_jobs import SQLiteLongJobs
from shiftwork.store.sqlite.observe import SQLiteObserve
from shiftwork.store.sqlite.reruns import SQLiteReruns
from shiftwork.store.sqlite.schedules import SQLiteSchedules
from shiftwork.store.sqlite.streams import SQLiteStreams
from shiftwork.store.sqlite.table_health import read_table_health
from shiftwork.store.sqlite.wakeups import DataVersionWatcher
from shiftwork.store.sqlite.workflows import SQLiteWorkflows

log = logging.getLogger("shiftwork.store.sqlite")


#: The mode a new database file is created with (owner only); see _create_private.
FILE_MODE = 0o600

#: Page cache per connection (KiB); see _connect.
PAGE_CACHE_KIB = 16 * 1024

class SQLiteStore:
    """The SQLite engine core (connection per thread, named queries, clock: sqlite/core.py)
    and its area drivers, built on it."""

    engine = "sqlite"

    def __init__(self, path: str, clock: Clock | None = None, busy_timeout: float = 30.0) -> None:
        if not path:
            raise ConfigurationError("SQLite DSN needs a file path: sqlite:///path/to/jobs.db")
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            raise ConfigurationError(f"SQLite database folder {parent!r} does not exist")
        self.path = path
        self.clock = clock or SystemClock()
        self.busy_timeout = busy_timeout
        self.q = load_all_queries(__package__ or "")
        self._migrations = load_migrations(f"{__package__}.migrations")
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        #: The claim statements (which claim, and the loops of the limited ones: flow/).
        self.claims = SQLiteClaims(self)
        #: The worker registry and the leader lease.
        self.fleet = SQLiteFleet(self)
        cascade = SQLiteCascade(self)  # a finish resolves its dependents
        #: The jobs: insert, claim, complete, heartbeat, rescue, reads, rate buckets.
        self.jobs = SQLiteJobs(self, cascade, self.fleet, self.claims)
        #: The dependency statements (the decisions are composition/settling.py's).
        self.deps = DepsSql(self, cascade, self.jobs)
        #: Long jobs: the fenced touch, paused queues, effect keys.
        self.long_jobs = SQLiteLongJobs(self)
        #: The operations console's pages and bulk actions.
        self.console = JobsConsole(self, cascade)
        #: Payload columns for a key rotation (jobs/reencrypt.py).
        self.sealed = SealedRows(self)
        #: Counts, history and views for people and the leader.
        self.observe = SQLiteObserve(self)
        #: What each job logged.
        self.job_logs = SQLiteJobLogs(self)
        #: The durable workflows' statements.
        self.workflows = SQLiteWorkflows(self)
        #: Workflow streams.
        self.streams = SQLiteStreams(self)
        #: Forks and continue-as-new.
        self.reruns = SQLiteReruns(self)
        #: The schedule statements (the transactions are schedules/firing.py's).
        self.schedules = SQLiteSchedules(self)

    # -- connections -------------------------------------------------------------

    def _create_private(self) -> None:
        """A new database file readable by its owner only (0600): it holds every job's
        arguments and results. SQLite gives the -wal and -shm files the database file's
        mode. A file that exists keeps its mode: create it first to choose another."""
        if os.path.exists(self.path):
            return
        try:
            os.close(os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, FILE_MODE))
        except FileExistsError:
            pass  # another process made it first
        except OSError as exc:
            raise StorageError(f"cannot create SQLite database {self.path!r}: {exc}") from exc

    def _connect(self) -> sqlite3.Connection:
        self._create_private()
        try:
            conn = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None,
                                   check_same_thread=False)
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            # FULL: a commit is on disk before enqueue returns, even in WAL mode.
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute(f"PRAGMA busy_timeout={int(self.busy_timeout * 1000)}")
            conn.execute("PRAGMA foreign_keys=ON")
            # The default 2 MiB page cache: once the file outgrows it, a bulk insert
            # re-reads the table and claim index pages it keeps touching, from the WAL,
            # and runs at a quarter of the speed (23k vs 92k rows/s, benchmarks/).
            conn.execute(f"PRAGMA cache_size=-{PAGE_CACHE_KIB}")
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open SQLite database {self.path!r}: {exc}") from exc
        with self._lock:
            self._all.append(conn)
        return conn

    @property
    def conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
        return conn

    @contextmanager
    def _tx(self, conn: Any = None, immediate: bool = True) -> Iterator[sqlite3.Connection]:
        """A write transaction; BEGIN IMMEDIATE takes the write lock up front."""
        if conn is not None:  # the caller's connection and transaction
            yield conn
            return
        c = self.conn
        try:
            if immediate:
                self._begin_immediate(c)
            else:
                c.execute("BEGIN")
        except sqlite3.Error as exc:
            raise StorageError(f"SQLite {self.path!r}: {exc}") from exc
        try:
            yield c
        except BaseException:
            c.execute("ROLLBACK")
            raise
        else:
            c.execute("COMMIT")

    def _begin_immediate(self, c: sqlite3.Connection) -> None:
        """Take the write lock, polling for it every 0.2-2 ms.

        SQLite's own busy handler sleeps 1, 2, 5, 10 ... then 100 ms between tries, so
        behind a steady stream of writers (a flood being claimed and completed) a claim
        for an urgent queue slept up to 100 ms after the lock came free: urgent p99 of
        ~450 ms during a flood. The handler is off while we poll, on for everything else.
        """
        c.execute("PRAGMA busy_timeout=0")
        try:
            deadline = time.monotonic() + self.busy_timeout
            delay = 0.0002
            while True:
                try:
                    c.execute("BEGIN IMMEDIATE")
                    return
                except sqlite3.OperationalError as exc:
                    if exc.sqlite_errorcode != sqlite3.SQLITE_BUSY \
                            or time.monotonic() + delay > deadline:
                        raise
                time.sleep(delay)
                delay = min(delay * 1.5, 0.002)
        finally:
            c.execute(f"PRAGMA busy_timeout={int(self.busy_timeout * 1000)}")

    def _now(self) -> float:
        return self.clock.now().timestamp()

    # -- the core's primitives for the drivers (../core.py, core.py) -------------------------

    _unique_violation = sqlite3.IntegrityError

    def _session(self, conn: Any = None) -> AbstractContextManager[sqlite3.Connection]:
        return self._tx(conn)

    def _one(self, c: sqlite3.Connection, query: str, **params: Any) -> Any:
        now = self.clock.now()
        params["now"], params["now_iso"] = now.timestamp(), now.isoformat()
        return c.execute(self.q[query], params).fetchone()

    def _notify(self, c: sqlite3.Connection, queues: list[str]) -> None:
        pass  # workers see every commit through PRAGMA data_version (wakeups.py)

    def _rows(self, c: sqlite3.Connection, query: str, **params: Any) -> list[Any]:
        now = self.clock.now()
        params = {k: json.dumps(v) if isinstance(v, (list, tuple)) else v
                  for k, v in params.items()}
        params["now"], params["now_iso"] = now.timestamp(), now.isoformat()
        return c.execute(self.q[query], params).fetchall()

    def _instant(self, value: Any) -> datetime | None:
        return from_ts(value)

    def _reader(self) -> AbstractContextManager[sqlite3.Connection]:
        return nullcontext(self.conn)  # one statement reads a consistent snapshot

    def close(self) -> None:
        with self._lock:
            for c in self._all:
                with suppress(sqlite3.Error):
                    c.close()
            self._all.clear()
        self._local = threading.local()

    async def aclose(self) -> None:
        """Nothing async to close on SQLite."""

    def connection_budget(self) -> int | None:
        """None: SQLite holds one connection per thread that uses it, not a pool."""
        return None

    def ping(self) -> None:
        self.conn.execute("SELECT 1")

    def db_now(self) -> datetime:
        return self.clock.now()

    def table_health(self) -> TableHealth:
        return read_table_health(self.conn, self.q, self.path)

    def wakeups_listen(self, topic: str = "jobs") -> DataVersionWatcher:
        # A connection of the watcher's own: data_version is per connection, so the first
        # read and every later one must be on the same one, whichever thread reads.
        return DataVersionWatcher(self._connect())

    # -- schema -----------------------------------------------------------------------

    def migrate(self) -> list[int]:
        applied: list[int] = []
        with self._tx() as c:
            c.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                      "name TEXT NOT NULL, applied_at REAL NOT NULL)")
            done = {r[0] for r in c.execute("SELECT version FROM schema_migrations")}
            for version, name, text in self._migrations:
                if version in done:
                    continue
                for statement in _split_statements(text):
                    c.execute(statement)
                if "writable_schema" in text:
                    # the stored schema text was edited (0032): a new schema version makes
                    # every connection, this one too, read it again
                    version_now = c.execute("PRAGMA schema_version").fetchone()[0]
                    c.execute(f"PRAGMA schema_version = {int(version_now) + 1}")
                c.execute("INSERT INTO schema_migrations VALUES (?, ?, ?)",
                          (version, name, self._now()))
                applied.append(version)
        return applied

    def schema_latest(self) -> int:
        return max(version for version, _, _ in self._migrations)

    def schema_version(self) -> int:
        try:
            row = self.conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
        except sqlite3.OperationalError:
            return 0
        return int(row[0] or 0)

    def _read(self, sql: str, params: dict[str, Any], jobs: bool = False) -> list[Any]:
        """Rows of ``sql`` (a console or observe query), as jobs with ``jobs``."""
        values = {k: json.dumps(v) if isinstance(v, (list, tuple)) else v
                  for k, v in params.items()}
        values["now"] = self._now()
        rows = self.conn.execute(sql, values).fetchall()
        return [job_from_row(dict(r), from_ts, loads) for r in rows] if jobs else rows

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection in ``BEGIN IMMEDIATE``: commits on exit, rolls back on error.

        SQLite has one writer at a time: keep these transactions short.
        """
        with self._tx() as c:
            yield c

    # -- test support ------------------------------------------------------------------

    def debug_install_transition_guard(self) -> None:
        pairs = " OR ".join(f"(OLD.state = '{a}' AND NEW.state = '{b}')" for a, b in legal_pairs())
        with self._tx() as c:
            c.execute("DROP TRIGGER IF EXISTS transition_guard")
            c.execute("DROP TRIGGER IF EXISTS transition_guard_insert")
            c.execute(f"""
                CREATE TRIGGER transition_guard BEFORE UPDATE OF state ON jobs
                WHEN OLD.state <> NEW.state AND NOT ({pairs})
                BEGIN SELECT RAISE(ABORT, 'illegal transition'); END""")
            c.execute("""
                CREATE TRIGGER transition_guard_insert BEFORE INSERT ON jobs
                WHEN NEW.state NOT IN ('available', 'scheduled')
                BEGIN SELECT RAISE(ABORT, 'illegal initial state'); END""")


def _split_statements(text: str) -> list[str]:
    """Split a migration into statements (no semicolons inside our DDL literals; a
    trigger's body, BEGIN ... END, holds several: pieces are joined until complete)."""
    lines = [ln for ln in text.splitlines() if not ln.strip().startswith("--")]
    out: list[str] = []
    pending = ""
    for piece in "\n".join(lines).split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                out.append(pending.strip().removesuffix(";"))
            pending = ""
    if pending.strip(" \n;"):
        out.append(pending.strip().removesuffix(";"))
    return out
