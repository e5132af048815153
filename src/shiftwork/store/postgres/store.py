"""PostgreSQL engine: SKIP LOCKED claims, LISTEN/NOTIFY wake-ups, leases on DB time."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable, Iterator
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
    JobNotFoundError,
    StorageError,
)
from shiftwork.core.names import check_schema
from shiftwork.core.redact import describe_dsn, redact
from shiftwork.core.states import JobState
from shiftwork.model.limits import ClaimFlow, ClaimKind
from shiftwork.model.new_job import Mark, NewJob
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
from shiftwork.store.connections import Connections, application_name
from shiftwork.store.console import JobsConsole
from shiftwork.store.deps import DepsActions, DepsSql
from shiftwork.store.jobs import (
    JobsActions,
    error_json,
    held_jobs,
    rescued_jobs,
)
from shiftwork.store.postgres.arrays import (
    int_array,
    or_null,
    word_array,
)
from shiftwork.store.postgres.async_jobs import PostgresAsyncJobs
from shiftwork.store.postgres.claims import PostgresClaims
from shiftwork.store.postgres.connect_errors import libpq_text, lost_reply, read_only, refusal
from shiftwork.store.postgres.copy_rows import copy_jobs, copy_staged
from shiftwork.store.postgres.fleet import PostgresFleet
from shiftwork.store.postgres.job_logs import PostgresJobLogs
from shiftwork.store.postgres.keyed import keys_taken, settle_keys
from shiftwork.store.postgres.long_jobs import PostgresLongJobs
from shiftwork.store.postgres.observe import PostgresObserve
from shiftwork.store.postgres.reconnect import reconnect_options
from shiftwork.store.postgres.schedules import PostgresSchedules
from shiftwork.store.postgres.table_health import read_table_health
from shiftwork.store.postgres.wakeups import PostgresWakeListener
from shiftwork.store.postgres.workflows import PostgresWorkflows
from shiftwork.store.rows import aware, decoded, job_from_row, legal_pairs, queue_stats_from_rows
from shiftwork.store.sqlfile import load_all_queries, load_migrations
from shiftwork.store.wakeups import due_counts, due_wakeup, due_wakeups, shared_wakeups

log = logging.getLogger("shiftwork.store.postgres")

NOTIFY_CHANNEL_PREFIX = "shiftwork_jobs_"
#: Finished jobs someone waits on (job.result()): a channel of their own, so the
#: workers' listeners are not woken by completions.
DONE_CHANNEL_PREFIX = "shiftwork_done_"
_UNIQUE = "jobs_unique_key_idx"
#: Jobs with unique keys go in statements of at most this many rows.
KEYED_BATCH = 5000
_NO_FLOW = ClaimFlow()
COPY_MIN_ROWS = 200  # from this many jobs, COPY beats one INSERT (keyed ones: into a stage)


class PostgresStore(PostgresAsyncJobs, DepsActions, JobsActions):
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
        quoted = f'"{self.schema}"'
        now = "coalesce(%(now)s::timestamptz, now())"
        self.q = load_all_queries(__package__ or "", schema=quoted, now=now)
        self._migrations = load_migrations(f"{__package__}.migrations", schema=quoted)
        self.async_pool_size = async_pool_size  # enqueue_async's pool (async_jobs.py)
        self._connect_timeout = connect_timeout
        self._pool: ConnectionPool | None = None
        self._pool_lock = threading.Lock()
        #: The claim statements (which claim, and the limited ones' loops: flow/).
        self.claims = PostgresClaims(self)
        #: The dependency statements (the decisions are composition/settling.py's).
        self.deps = DepsSql(self)
        #: Long jobs: the fenced touch, paused queues, effect keys.
        self.long_jobs = PostgresLongJobs(self)
        #: The operations console's pages and bulk actions.
        self.console = JobsConsole(self)
        #: The worker registry and the leader lease.
        self.fleet = PostgresFleet(self)
        #: Counts, history and views for people and the leader.
        self.observe = PostgresObserve(self)
        #: What each job logged.
        self.job_logs = PostgresJobLogs(self)
        #: The durable workflows' statements.
        self.workflows = PostgresWorkflows(self)
        #: The schedule statements (the transactions are schedules/firing.py's).
        self.schedules = PostgresSchedules(self)

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
            raise StorageError(f"PostgreSQL at {describe_dsn(self.dsn)}: {exc}") from exc

    def _p(self, **params: Any) -> dict[str, Any]:
        params["now"] = self.clock.db_now()
        return params

    # -- the primitives of the shared Python (../engine_sql.py) --------------------------

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

    def _deps_resolve_step(self, c: psycopg.Connection[Any], parent_ids: list[int],
                           finished: bool = False) -> list[Any]:
        return [r for r in self._rows(c, "deps_resolve", ids=parent_ids, finished=finished)
                if r[0] is not None]

    def _instant(self, value: Any) -> Any:
        return aware(value)

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
            return read_table_health(c, self.q)

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

    # -- enqueue -------------------------------------------------------------------------

    def jobs_insert(self, jobs: list[NewJob], conn: Any = None) -> list[EnqueueResult]:
        if not jobs:
            return []
        if not any(j.unique_key for j in jobs):
            if len(jobs) >= COPY_MIN_ROWS:
                return self._insert_copy(len(jobs), jobs, conn)
            return self._insert_plain(jobs, conn)
        out: list[EnqueueResult] = []
        for start in range(0, len(jobs), KEYED_BATCH):
            out += self._insert_keyed(jobs[start:start + KEYED_BATCH], conn)
        return out

    def jobs_insert_stream(self, count: int, jobs: Iterable[NewJob],
                           conn: Any = None) -> list[EnqueueResult]:
        if count < COPY_MIN_ROWS:
            return self.jobs_insert(list(jobs), conn)
        return self._insert_copy(count, jobs, conn)

    def _insert_keyed(self, jobs: list[NewJob], conn: Any) -> list[EnqueueResult]:
        """Jobs with unique keys (and any others in the same call): insert, then settle
        the keys that were already taken. Many (a schedule burst): staged by COPY."""
        staged = len(jobs) >= COPY_MIN_ROWS
        params = self._p() if staged else self._p(
            tasks=[j.task for j in jobs], queues=[j.queue for j in jobs],
            args=[j.args_json for j in jobs], priorities=[j.priority for j in jobs],
            max_attempts=[j.max_attempts for j in jobs], run_ats=[j.run_at for j in jobs],
            unique_keys=[j.unique_key for j in jobs], timeouts=[j.timeout for j in jobs],
            metas=[j.meta_json for j in jobs],
        )
        due = due_counts(jobs)
        keyed = any(j.unique_key for j in jobs)
        for _ in range(5):
            with self._conn(conn) as c, c.transaction():
                if staged:
                    rows = self._insert_staged(c, jobs, params)
                else:
                    rows = c.execute(self.q["jobs_insert"], params).fetchall()
                results = self._match_inserted(c, jobs, rows) if keyed else [
                    EnqueueResult(r[0], True) for r in rows]
                if results is None:
                    continue  # a conflicting job finished between insert and lookup
                if due:
                    c.execute(self.q["jobs_notify"],
                              {"channel": self.channel, "queues": shared_wakeups(due)})
                return results
        raise StorageError("could not settle unique keys after 5 tries; the key is contended")

    def _insert_staged(self, c: psycopg.Connection[Any], jobs: list[NewJob],
                       params: dict[str, Any]) -> list[Any]:
        """jobs_insert through a staging table filled by binary COPY: (id, key) rows."""
        c.execute(self.q["jobs_stage_create"])
        copy_staged(c.cursor(), self.q["jobs_stage_copy"], jobs)
        rows = c.execute(self.q["jobs_insert_staged"], params).fetchall()
        c.execute(self.q["jobs_stage_drop"])
        return rows

    def _insert_plain(self, jobs: list[NewJob], conn: Any) -> list[EnqueueResult]:
        """Few jobs without unique keys: insert and notify in one statement."""
        if len(jobs) == 1:
            j = jobs[0]
            with self._conn(conn) as c:
                one = c.execute(self.q["jobs_insert_one"], self._p(
                    queue=j.queue, task=j.task, args=j.args_json, priority=j.priority,
                    max_attempts=j.max_attempts, run_at=j.run_at, timeout=j.timeout,
                    meta=j.meta_json, channel=self.channel,
                    notify=due_wakeup(j))
                                 ).fetchone()
            assert one is not None
            return [EnqueueResult(one[0], True)]
        params = self._p(
            tasks=[j.task for j in jobs], queues=[j.queue for j in jobs],
            args=[j.args_json for j in jobs], priorities=[j.priority for j in jobs],
            max_attempts=[j.max_attempts for j in jobs], run_ats=[j.run_at for j in jobs],
            timeouts=[j.timeout for j in jobs], metas=[j.meta_json for j in jobs],
            channel=self.channel, notify=due_wakeups(jobs),
        )
        with self._conn(conn) as c:
            row = c.execute(self.q["jobs_insert_plain"], params).fetchone()
        assert row is not None
        return [EnqueueResult(job_id, True) for job_id in row[0]]

    def _insert_marked(self, c: psycopg.Connection[Any], jobs: list[NewJob],
                       marks: list[Mark]) -> list[EnqueueResult]:
        """A graph's or a group's jobs written whole by COPY, marks included: no update
        of the rows just written (a group of 10,000 spent 80 ms there)."""
        if any(j.unique_key for j in jobs):
            return super()._insert_marked(c, jobs, marks)
        return self._insert_copy(len(jobs), jobs, c, marks)

    def _insert_copy(self, count: int, jobs: Iterable[NewJob], conn: Any,
                     marks: list[Mark] | None = None) -> list[EnqueueResult]:
        """Many jobs without unique keys: reserve their ids, then COPY them in (binary),
        streamed in one transaction: the server inserts while the client builds and
        encodes the next ones. Any error rolls the whole insert back."""
        with self._conn(conn) as c, c.transaction():
            row = c.execute(self.q["jobs_reserve_ids"], self._p(n=count)).fetchone()
            assert row is not None
            now, ids = row[0], row[1]
            due_queues = copy_jobs(c.cursor(), self.q["jobs_copy" if marks is None else
                                                      "jobs_copy_marked"], ids, jobs, now, marks)
            if due_queues:  # at most ``count`` jobs each: enough wake-ups for all of them
                c.execute(self.q["jobs_notify"], {"channel": self.channel, "queues":
                          shared_wakeups((q, count) for q in sorted(due_queues))})
        return [EnqueueResult(job_id, True) for job_id in ids]

    def _match_inserted(self, c: psycopg.Connection[Any], jobs: list[NewJob],
                        rows: list[Any]) -> list[EnqueueResult] | None:
        missing = keys_taken(jobs, rows)
        found = c.execute(self.q["jobs_find_active_by_keys"], {"keys": missing}).fetchall() \
            if missing else []
        return settle_keys(jobs, rows, missing, found)

    # -- claim / complete ------------------------------------------------------------------

    def jobs_claim(self, queue: str, limit: int, worker_id: str,
                   lease_seconds: float) -> list[ClaimedJob]:
        return self.claims.claim(ClaimKind.PLAIN, queue, limit, worker_id, lease_seconds,
                                 _NO_FLOW)

    def rate_buckets_prune(self, prefix: str, idle_seconds: float) -> int:
        with self._conn() as c:
            return int(c.execute(self.q["rate_buckets_prune"], self._p(
                prefix=prefix, idle=idle_seconds)).rowcount)

    def rate_limit_push_back(self, key: str, seconds: float) -> None:
        with self._conn() as c:
            c.execute(self.q["rate_bucket_push_back"], self._p(key=key, seconds=seconds))

    def rate_buckets(self) -> list[tuple[str, float, datetime]]:
        with self._conn() as c:
            return [(r[0], float(r[1]), r[2]) for r in c.execute(self.q["rate_buckets_list"])]

    def rate_buckets_clear(self, key: str) -> bool:
        with self._conn() as c:
            return c.execute(self.q["rate_buckets_clear"], self._p(key=key)).rowcount > 0

    def jobs_complete_many(self, outcomes: list[Outcome]) -> set[int]:
        if not outcomes:
            return set()
        params = self._p(  # arrays.py: literals and NULLs, cheap to send
            ids=int_array(o.job_id for o in outcomes),
            attempts=int_array(o.attempt for o in outcomes),
            states=word_array(o.state.value for o in outcomes),
            run_ats=or_null([o.run_at for o in outcomes]),
            errors=or_null([error_json(o) for o in outcomes]),
            results=or_null([o.result_json for o in outcomes]),
            peaks=or_null([o.peak_rss for o in outcomes]),
            items=or_null([o.items for o in outcomes]),
        )
        done: set[int] = set()
        watched: list[int] = []
        groups: list[int] = []
        with self._conn() as c:
            for job_id, is_watched, group_id in c.execute(self.q["jobs_complete_many"], params):
                if group_id is not None:
                    groups.append(group_id)
                    continue
                done.add(job_id)
                if is_watched:
                    watched.append(job_id)
            if watched or groups:  # dependents, waiters, callbacks due: a statement more
                try:
                    if groups:
                        self._settle_groups(c, groups)
                    if watched:
                        self._resolve_in(c, watched, finished=True)
                except psycopg.Error as exc:  # the outcomes are written; the sweep and
                    # the waiters' own polling finish this
                    log.warning("could not resolve the dependents of %s (groups %s) yet: %s",
                                watched, groups, exc)
        return done

    def jobs_heartbeat(self, worker_id: str, lease_seconds: float,
                       held: list[tuple[int, int]]) -> list[tuple[int, int, bool]]:
        # Never prepared: the generic plan guesses 10 held pairs and loops over them for
        # every running job of the worker (16 ms for 200 pairs instead of 3 ms).
        with self._conn() as c:
            rows = c.execute(self.q["jobs_heartbeat"], self._p(
                worker=worker_id, lease=lease_seconds, ids=[h[0] for h in held],
                attempts=[h[1] for h in held]), prepare=False).fetchall()
            if any(r[0] is None for r in rows):  # its workers row is gone
                self.fleet.worker_back(c, worker_id)
        return held_jobs([r for r in rows if r[0] is not None])

    def jobs_release_unknown(self, worker_id: str, queue: str,
                             held: list[tuple[int, int]]) -> list[int]:
        with self._conn() as c:
            rows = c.execute(self.q["jobs_release_unknown"], self._p(
                worker=worker_id, queue=queue, ids=[h[0] for h in held],
                attempts=[h[1] for h in held]), prepare=False).fetchall()
            if rows:
                c.execute(self.q["jobs_notify"], {"channel": self.channel, "queues": [queue]})
        return [r[0] for r in rows]

    def jobs_written(self, outcomes: list[Outcome]) -> set[int]:
        if not outcomes:
            return set()
        with self._conn() as c:
            rows = c.execute(self.q["jobs_written"], {
                "ids": [o.job_id for o in outcomes], "attempts": [o.attempt for o in outcomes],
                "states": [o.state.value for o in outcomes]}).fetchall()
        return {r[0] for r in rows}

    def jobs_rescue(self, limit: int = 1000) -> list[RescuedJob]:
        with self._conn() as c:
            rows = c.execute(self.q["jobs_rescue"], self._p(limit=limit)).fetchall()
        return rescued_jobs(rows)

    def jobs_hand_back(self, worker_id: str, jobs: list[tuple[int, int]],
                       reason: HandBack = SHUTDOWN) -> int:
        if not jobs:
            return 0
        with self._conn() as c:
            cur = c.execute(self.q["jobs_hand_back"], self._p(
                worker=worker_id, ids=[j[0] for j in jobs], attempts=[j[1] for j in jobs],
                kind=reason.kind, type=reason.type, message=reason.message))
            c.execute(self.q["jobs_notify"], {"channel": self.channel, "queues": ["*"]})
            return cur.rowcount

    # -- inspection and manual actions -----------------------------------------------------

    def jobs_get(self, job_id: int) -> Job:
        with self._conn() as c:
            cur = c.cursor(row_factory=dict_row)
            row = cur.execute(self.q["jobs_get"], {"id": job_id}).fetchone()
        if row is None:
            raise JobNotFoundError(f"no job with id {job_id}")
        return job_from_row(row, aware, decoded)

    def jobs_list(self, state: JobState | None = None, queue: str | None = None,
                  task: str | None = None, limit: int = 50,
                  before_id: int | None = None) -> list[Job]:
        params = {"state": state.value if state else None, "queue": queue, "task": task,
                  "before": before_id, "limit": limit}
        with self._conn() as c:
            cur = c.cursor(row_factory=dict_row)
            rows = cur.execute(self.q["jobs_list"], params).fetchall()
        return [job_from_row(r, aware, decoded) for r in rows]

    def jobs_prune(self, finished_older_than: float, dead_older_than: float,
                   limit: int = 10_000) -> int:
        with self._conn() as c:
            return c.execute(self.q["jobs_prune"], self._p(
                finished=finished_older_than, dead=dead_older_than, limit=limit)).rowcount

    def queues_stats(self, include_finished: bool = True) -> list[QueueStats]:
        with self._conn() as c:
            active = c.execute(self.q["queues_stats"], self._p()).fetchall()
            finished = {r[0]: (r[1], r[2]) for r in c.execute(self.q["queues_finished_counts"])
                        } if include_finished else {}
        return queue_stats_from_rows(active, finished)

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
        DROP TRIGGER IF EXISTS transition_guard ON {s}.jobs;
        CREATE TRIGGER transition_guard BEFORE INSERT OR UPDATE OF state ON {s}.jobs
          FOR EACH ROW EXECUTE FUNCTION {s}.shiftwork_transition_guard();
        """
        with self._conn() as c:
            c.execute(body.encode())

