"""SQLite engine: WAL mode, durable commits, BEGIN IMMEDIATE claims, one host."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import threading

# Real time, not the runtime's clock: the busy timeout bounds real sleeps.
import time
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from datetime import datetime
from typing import Any

from shiftwork.core.clock import Clock, SystemClock
from shiftwork.core.errors import ConfigurationError, JobNotFoundError, StorageError
from shiftwork.core.states import FINAL, JobState
from shiftwork.model.limits import ClaimFlow, ClaimKind
from shiftwork.model.new_job import NO_MARK, Mark, NewJob
from shiftwork.model.outcome import Outcome
from shiftwork.model.records import (
    SHUTDOWN,
    ClaimedJob,
    EnqueueResult,
    HandBack,
    Job,
    QueueStats,
    RescuedJob,
)
from shiftwork.model.table_health import TableHealth
from shiftwork.store.console import JobsConsole
from shiftwork.store.deps import DepsActions, DepsSql
from shiftwork.store.jobs import (
    JobsActions,
    error_json,
    held_jobs,
    rescued_jobs,
)
from shiftwork.store.rows import from_ts, job_from_row, legal_pairs, loads, queue_stats_from_rows
from shiftwork.store.sqlfile import load_all_queries, load_migrations
from shiftwork.store.sqlite.claims import SQLiteClaims
from shiftwork.store.sqlite.fleet import SQLiteFleet
from shiftwork.store.sqlite.job_logs import SQLiteJobLogs
from shiftwork.store.sqlite.long_jobs import SQLiteLongJobs
from shiftwork.store.sqlite.observe import SQLiteObserve
from shiftwork.store.sqlite.schedules import SQLiteSchedules
from shiftwork.store.sqlite.table_health import read_table_health
from shiftwork.store.sqlite.wakeups import DataVersionWatcher
from shiftwork.store.sqlite.workflows import SQLiteWorkflows

log = logging.getLogger("shiftwork.store.sqlite")


def to_ts(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


#: Jobs are inserted in transactions of at most this many rows.
PLAIN_BATCH = 500


_compact_json = json.JSONEncoder(separators=(",", ":")).encode


def _plain_row(j: NewJob, now: float) -> tuple[Any, ...]:
    run_at = now if j.run_at is None else j.run_at.timestamp()
    return (j.queue, j.task, j.args_json, "available" if run_at <= now else "scheduled",
            j.priority, j.max_attempts, run_at, now, j.timeout, j.meta_json)


def _runs(jobs: list[NewJob], marks: list[Mark] | None) -> list[tuple[int, int]]:
    """The stretches [start, end) of ``jobs`` whose rows differ only in their arguments
    (and, with ``marks``, share their mark): one for the usual bulk call or group, two
    for a group and its callback."""
    runs: list[tuple[int, int]] = []
    start, key = 0, None
    for i, j in enumerate(jobs):
        k = (j.task, j.queue, j.priority, j.max_attempts, j.run_at, j.timeout, j.meta_json,
             marks[i] if marks is not None else None)
        if k != key:
            if i:
                runs.append((start, i))
            start, key = i, k
    runs.append((start, len(jobs)))
    return runs


#: More stretches than this in one insert: the row-array statement instead.
UNIFORM_RUNS = 4


def _inserted(c: sqlite3.Connection, cur: sqlite3.Cursor, count: int) -> list[EnqueueResult]:
    """The ids of the ``count`` jobs one insert statement just wrote: the write lock is
    held and ids are AUTOINCREMENT, so they are the ``count`` up to the last one."""
    last = c.execute("SELECT last_insert_rowid()").fetchone()[0]
    if cur.rowcount != count:
        raise StorageError(f"inserted {cur.rowcount} of {count} jobs")
    return [EnqueueResult(job_id, True) for job_id in range(last - count + 1, last + 1)]


def _tally(finished: Iterable[tuple[int, bool]]) -> dict[int, list[int]]:
    """(group, succeeded) per member finished -> group: [finished, of them failed]."""
    counts: dict[int, list[int]] = {}
    for group_id, succeeded in finished:
        hit = counts.setdefault(group_id, [0, 0])
        hit[0] += 1
        hit[1] += not succeeded
    return counts


#: Outcomes written per transaction (see jobs_complete_many).
COMPLETE_BATCH = 200

#: The mode a new database file is created with (owner only); see _create_private.
FILE_MODE = 0o600

#: Page cache per connection (KiB); see _connect.
PAGE_CACHE_KIB = 16 * 1024
_NO_FLOW = ClaimFlow()

class SQLiteStore(DepsActions, JobsActions):
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
        #: The dependency statements (the decisions are composition/settling.py's).
        self.deps = DepsSql(self)
        #: Long jobs: the fenced touch, paused queues, effect keys.
        self.long_jobs = SQLiteLongJobs(self)
        #: The operations console's pages and bulk actions.
        self.console = JobsConsole(self)
        #: The worker registry and the leader lease.
        self.fleet = SQLiteFleet(self)
        #: Counts, history and views for people and the leader.
        self.observe = SQLiteObserve(self)
        #: What each job logged.
        self.job_logs = SQLiteJobLogs(self)
        #: The durable workflows' statements.
        self.workflows = SQLiteWorkflows(self)
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

    # -- the primitives of the shared Python (../engine_sql.py) --------------------------

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

    def _deps_resolve_step(self, c: sqlite3.Connection, parent_ids: list[int],
                           finished: bool = False) -> list[Any]:
        hits: dict[int, list[int]] = {}  # dependent -> [edges taken, a failed parent or 0]
        for job_id, parent_id, bad in self._rows(c, "deps_take_edges", ids=parent_ids):
            hit = hits.setdefault(job_id, [0, 0])
            hit[0] += 1
            if bad and (not hit[1] or parent_id < hit[1]):
                hit[1] = parent_id
        changed = []
        for job_id, (n, bad) in sorted(hits.items()):
            changed += self._rows(c, "deps_count_down", id=job_id, n=n, bad=bad or None)
        return changed

    def _groups_count_step(self, c: sqlite3.Connection, job_ids: list[int]) -> list[int]:
        return self._groups_count_down(c, _tally(
            (group_id, state == JobState.SUCCEEDED.value)
            for group_id, state in self._rows(c, "groups_members_count", ids=job_ids)))

    def _groups_count_down(self, c: sqlite3.Connection, counts: dict[int, list[int]]
                           ) -> list[int]:
        """Take ``counts`` (group -> [finished, failed]) off their groups; the groups
        whose callback may now be due."""
        due = []
        for group_id, (n, bad) in sorted(counts.items()):
            due += [r[0] for r in self._rows(c, "groups_count_down", group=group_id, n=n,
                                             bad=bad) if r[1]]
        return due

    def _groups_settle_step(self, c: sqlite3.Connection, group_ids: list[int]) -> list[Any]:
        changed = []
        for group_id, callback_id, cancel in self._rows(c, "groups_settle", ids=group_ids):
            changed += self._rows(c, "groups_release", id=callback_id, group=group_id,
                                  cancel=bool(cancel))
        return changed

    def _instant(self, value: Any) -> Any:
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

    async def jobs_insert_async(self, jobs: list[NewJob], conn: Any = None
                                ) -> list[EnqueueResult]:
        """:meth:`jobs_insert` from asyncio code: sqlite3 has no async driver, so the
        insert runs in a thread (with ``conn``: in the caller's thread, on its connection,
        as sqlite3 connections belong to the thread that made them)."""
        if conn is not None:
            return self.jobs_insert(jobs, conn)
        return await asyncio.to_thread(self.jobs_insert, jobs)

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

    # -- enqueue --------------------------------------------------------------------------

    def jobs_insert(self, jobs: list[NewJob], conn: Any = None) -> list[EnqueueResult]:
        now = self._now()
        if len(jobs) > 1 and not any(j.unique_key for j in jobs):
            return self._insert_plain(jobs, now, conn)
        results: list[EnqueueResult] = []
        for start in range(0, len(jobs), PLAIN_BATCH):  # short write-lock holds, as below
            results += self._insert_keyed(jobs[start:start + PLAIN_BATCH], now, conn)
        return results

    def _insert_keyed(self, jobs: list[NewJob], now: float, conn: Any) -> list[EnqueueResult]:
        """Jobs one by one: an active job with the same unique key wins."""
        results: list[EnqueueResult] = []
        insert = self.q["jobs_insert"]
        with self._tx(conn) as c:
            for j in jobs:
                row = c.execute(insert, {
                    "queue": j.queue, "task": j.task, "args": j.args_json, "now": now,
                    "run_at": to_ts(j.run_at), "priority": j.priority,
                    "max_attempts": j.max_attempts, "unique_key": j.unique_key,
                    "timeout": j.timeout, "meta": j.meta_json,
                }).fetchone()
                if row is not None:
                    results.append(EnqueueResult(row[0], True))
                else:  # the write lock is held, so the active holder is still there
                    found = c.execute(self.q["jobs_find_active_by_key"],
                                      {"key": j.unique_key}).fetchone()
                    results.append(EnqueueResult(found[0], False))
        return results

    def jobs_insert_stream(self, count: int, jobs: Iterable[NewJob],
                           conn: Any = None) -> list[EnqueueResult]:
        # Built first, all of them: one thread would gain nothing from interleaving, and
        # the inserts commit in batches.
        return self.jobs_insert(list(jobs), conn)

    def _insert_plain(self, jobs: list[NewJob], now: float, conn: Any) -> list[EnqueueResult]:
        """Jobs without unique keys: one statement per PLAIN_BATCH rows, each its own
        transaction (unless ``conn``'s) so workers can claim in between. The write lock
        is held and ids are AUTOINCREMENT, so a batch's ids are the ``len(batch)`` up to
        the last one."""
        out: list[EnqueueResult] = []
        insert = self.q["jobs_insert_plain"]
        for start in range(0, len(jobs), PLAIN_BATCH):
            batch = jobs[start:start + PLAIN_BATCH]
            with self._tx(conn) as c:
                runs = _runs(batch, None)
                if len(runs) <= UNIFORM_RUNS:
                    for a, b in runs:
                        out += self._insert_uniform(c, batch[a:b], NO_MARK, now)
                else:
                    rows = _compact_json([_plain_row(j, now) for j in batch])
                    out += _inserted(c, c.execute(insert, {"rows": rows}), len(batch))
        return out

    def _insert_uniform(self, c: sqlite3.Connection, jobs: list[NewJob], mark: Mark,
                        now: float) -> list[EnqueueResult]:
        """Jobs that differ only in their arguments, with one mark, in one statement."""
        first = _plain_row(jobs[0], now)
        params: dict[str, Any] = {
            "queue": first[0], "task": first[1], "state": first[3], "priority": first[4],
            "max_attempts": first[5], "run_at": first[6], "now": now, "timeout": first[8],
            "meta": first[9], "args": _compact_json([j.args_json for j in jobs])}
        query = "jobs_insert_uniform"
        if mark != NO_MARK:  # (plain jobs name no column of a later migration)
            query = "jobs_insert_uniform_marked"
            params.update(deps_pending=mark.deps_pending, watched=int(mark.watched),
                          group_id=mark.group_id, group_mark=0 if mark.group_id is None else 1)
        return _inserted(c, c.execute(self.q[query], params), len(jobs))

    def _insert_marked(self, c: sqlite3.Connection, jobs: list[NewJob], marks: list[Mark]
                       ) -> list[EnqueueResult]:
        """A graph's or a group's jobs in one statement, marks included (no update of the
        rows just written). Inside the graph's transaction: the write lock is held."""
        if any(j.unique_key for j in jobs):
            return super()._insert_marked(c, jobs, marks)
        now = self._now()
        runs = _runs(jobs, marks)
        if len(runs) <= UNIFORM_RUNS:  # a group's members (and its callback)
            return [r for a, b in runs for r in self._insert_uniform(c, jobs[a:b], marks[a], now)]
        rows = _compact_json([(*_plain_row(j, now), m.deps_pending, int(m.watched), m.group_id,
                               0 if m.group_id is None else 1)
                              for j, m in zip(jobs, marks, strict=True)])
        return _inserted(c, c.execute(self.q["jobs_insert_marked"], {"rows": rows}), len(jobs))

    # -- claim / complete -----------------------------------------------------------------

    def jobs_claim(self, queue: str, limit: int, worker_id: str,
                   lease_seconds: float) -> list[ClaimedJob]:
        return self.claims.claim(ClaimKind.PLAIN, queue, limit, worker_id, lease_seconds,
                                 _NO_FLOW)

    def rate_buckets_prune(self, prefix: str, idle_seconds: float) -> int:
        with self._tx() as c:
            return int(c.execute(self.q["rate_buckets_prune"], {
                "prefix": prefix, "idle": idle_seconds, "now": self._now()}).rowcount)

    def rate_limit_push_back(self, key: str, seconds: float) -> None:
        with self._tx() as c:
            c.execute(self.q["rate_bucket_push_back"], {"key": key, "seconds": seconds,
                                                        "now": self._now()})

    def rate_buckets(self) -> list[tuple[str, float, datetime]]:
        rows = self.conn.execute(self.q["rate_buckets_list"]).fetchall()
        return [(r[0], float(r[1] or 0.0), from_ts(r[2] or 0.0))  # type: ignore[misc]
                for r in rows]

    def rate_buckets_clear(self, key: str) -> bool:
        with self._tx() as c:
            return c.execute(self.q["rate_buckets_clear"],
                             {"key": key, "now": self._now()}).rowcount > 0

    def jobs_complete_many(self, outcomes: list[Outcome]) -> set[int]:
        if not outcomes:
            return set()
        done: set[int] = set()
        # A transaction per COMPLETE_BATCH outcomes: the write lock is held for a few
        # milliseconds at a time, so a claim for another queue is not stuck behind a
        # thousand completions (that was 75-95 ms at a time during a flood).
        for start in range(0, len(outcomes), COMPLETE_BATCH):
            done |= self._complete(outcomes[start:start + COMPLETE_BATCH])
        return done

    def _complete(self, outcomes: list[Outcome]) -> set[int]:
        now = self._now()
        with self._tx() as c:
            # The write lock is held: read which attempts still hold their jobs, then
            # update exactly those (each UPDATE keeps its own fence too).
            running = c.execute(self.q["jobs_running_attempts"], {
                "ids": json.dumps([o.job_id for o in outcomes])}).fetchall()
            held = {(r[0], r[1]) for r in running}
            watched = {r[0] for r in running if r[2]}
            group_of = {r[0]: r[3] for r in running if r[3] is not None}
            fenced = [o for o in outcomes if (o.job_id, o.attempt) in held]
            plain: list[tuple[float, int | None, int, int]] = []
            other: list[Outcome] = []
            for o in fenced:
                if o.state is JobState.SUCCEEDED and o.result_json is None \
                        and o.peak_rss is None:
                    plain.append((now, o.items, o.job_id, o.attempt))
                else:
                    other.append(o)
            if plain:
                c.executemany(self.q["jobs_complete_succeeded"], plain)
            if other:
                c.executemany(self.q["jobs_complete_one"], [{
                    "id": o.job_id, "attempt": o.attempt, "state": o.state.value, "now": now,
                    "run_at": to_ts(o.run_at),
                    "error": error_json(o),
                    "result": o.result_json, "peak_rss": o.peak_rss, "items": o.items}
                   for o in other])
            # Group members finished: the updates above marked them counted; count them
            # into their groups. Jobs with dependents (or waiters): resolve them. All in
            # this transaction.
            due = self._groups_count_down(c, _tally(
                (group_of[o.job_id], o.state is JobState.SUCCEEDED)
                for o in fenced if o.job_id in group_of and o.state in FINAL))
            if due:
                self._settle_groups(c, due)
            finished = [o.job_id for o in fenced if o.job_id in watched and o.state in FINAL]
            if finished:
                self._resolve_in(c, finished)
        return {o.job_id for o in fenced}

    def jobs_heartbeat(self, worker_id: str, lease_seconds: float,
                       held: list[tuple[int, int]]) -> list[tuple[int, int, bool]]:
        now = self._now()
        with self._tx() as c:
            beat = c.execute(self.q["jobs_heartbeat_worker"], {"worker": worker_id, "now": now})
            if beat.rowcount == 0:  # its workers row is gone (pruned while it was stopped)
                self.fleet.worker_back(c, worker_id)
            rows = c.execute(self.q["jobs_heartbeat"], {
                "worker": worker_id, "now": now, "lease": lease_seconds,
                "held": json.dumps(held)}).fetchall()
        return held_jobs(rows)

    def jobs_release_unknown(self, worker_id: str, queue: str,
                             held: list[tuple[int, int]]) -> list[int]:
        now = self.clock.now()
        with self._tx() as c:
            rows = c.execute(self.q["jobs_release_unknown"], {
                "worker": worker_id, "queue": queue, "held": json.dumps(held),
                "now": now.timestamp(), "now_iso": now.isoformat()}).fetchall()
        return [r[0] for r in rows]

    def jobs_written(self, outcomes: list[Outcome]) -> set[int]:
        if not outcomes:
            return set()
        rows = self.conn.execute(self.q["jobs_written"], {"outcomes": json.dumps(
            [[o.job_id, o.attempt, o.state.value] for o in outcomes])}).fetchall()
        return {r[0] for r in rows}

    def jobs_rescue(self, limit: int = 1000) -> list[RescuedJob]:
        now = self.clock.now()
        params = {"now": now.timestamp(), "now_iso": now.isoformat(), "limit": limit}
        with self._tx() as c:
            c.execute(self.q["jobs_rescue_flows"], params)
            rows = c.execute(self.q["jobs_rescue"], params).fetchall()
        return rescued_jobs(rows)

    def jobs_hand_back(self, worker_id: str, jobs: list[tuple[int, int]],
                       reason: HandBack = SHUTDOWN) -> int:
        now = self.clock.now()
        count = 0
        with self._tx() as c:
            for job_id, attempt in jobs:
                count += c.execute(self.q["jobs_hand_back"], {
                    "id": job_id, "attempt": attempt, "worker": worker_id,
                    "now": now.timestamp(), "now_iso": now.isoformat(), "kind": reason.kind,
                    "type": reason.type, "message": reason.message}).rowcount
        return count

    # -- inspection and manual actions ----------------------------------------------

    def jobs_get(self, job_id: int) -> Job:
        row = self.conn.execute(self.q["jobs_get"], {"id": job_id}).fetchone()
        if row is None:
            raise JobNotFoundError(f"no job with id {job_id}")
        return job_from_row(dict(row), from_ts, loads)

    def jobs_list(self, state: JobState | None = None, queue: str | None = None,
                  task: str | None = None, limit: int = 50,
                  before_id: int | None = None) -> list[Job]:
        params = {"state": state.value if state else None, "queue": queue, "task": task,
                  "before": before_id, "limit": limit}
        rows = self.conn.execute(self.q["jobs_list"], params)
        return [job_from_row(dict(r), from_ts, loads) for r in rows]

    def jobs_prune(self, finished_older_than: float, dead_older_than: float,
                   limit: int = 10_000) -> int:
        with self._tx() as c:
            return c.execute(self.q["jobs_prune"], {
                "now": self._now(), "finished": finished_older_than, "dead": dead_older_than,
                "limit": limit}).rowcount

    def queues_stats(self, include_finished: bool = True) -> list[QueueStats]:
        c = self.conn
        now = self._now()
        active = c.execute(self.q["queues_stats"], {"now": now}).fetchall()
        finished = {r[0]: (r[1], r[2]) for r in c.execute(self.q["queues_finished_counts"])
                    } if include_finished else {}
        return queue_stats_from_rows(active, finished)

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
