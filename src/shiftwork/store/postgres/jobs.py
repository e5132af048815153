"""PostgreSQL's jobs (``store.jobs``): insert (one statement, COPY, keyed batches, async),
the plain claim, completion, heartbeat, rescue, hand-back, the reads of jobs and queues,
and the rate buckets, on the engine core's connections. Retry and cancel are written
once (store/jobs.py)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row

from shiftwork.core.errors import JobNotFoundError, StorageError
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
from shiftwork.store.base import ClaimStatements, FleetStatements
from shiftwork.store.deps import Cascade
from shiftwork.store.jobs import (
    JobsCommon,
    dedup_params,
    error_json,
    held_jobs,
    rescued_jobs,
    split_dedup,
)
from shiftwork.store.postgres.arrays import int_array, or_null, word_array
from shiftwork.store.postgres.copy_rows import copy_jobs, copy_staged
from shiftwork.store.postgres.core import PostgresCore
from shiftwork.store.postgres.keyed import keys_taken, settle_keys
from shiftwork.store.rows import aware, decoded, job_from_row, queue_stats_from_rows
from shiftwork.store.wakeups import due_counts, due_wakeup, due_wakeups, shared_wakeups

log = logging.getLogger("shiftwork.store.postgres")

#: Jobs with unique keys go in statements of at most this many rows.
KEYED_BATCH = 5000
_NO_FLOW = ClaimFlow()
COPY_MIN_ROWS = 200  # from this many jobs, COPY beats one INSERT (keyed ones: into a stage)


class PostgresJobs(JobsCommon):
    """The jobs statements on a PostgreSQL core's connections. A completion resolves its
    dependents on its own connection (``cascade``), a heartbeat registers a pruned worker
    again (``fleet``), the plain claim is ``claims``' one statement."""

    def __init__(self, core: PostgresCore, cascade: Cascade, fleet: FleetStatements,
                 claims: ClaimStatements) -> None:
        super().__init__(core, cascade)
        self.q = core.q
        self._conn = core._conn
        self._p = core._p
        self._aconn = core._aconn
        self.channel = core.channel
        self._fleet = fleet
        self._claims = claims
        self._core = core

    # -- insert ------------------------------------------------------------------------

    def insert(self, jobs: list[NewJob], conn: Any = None) -> list[EnqueueResult]:
        if not jobs:
            return []
        if any(j.dedup for j in jobs):
            return split_dedup(jobs, lambda js: self._insert_dedup(js, conn),
                               lambda js: self.insert(js, conn))
        if not any(j.unique_key for j in jobs):
            if len(jobs) >= COPY_MIN_ROWS:
                return self._insert_copy(len(jobs), jobs, conn)
            return self._insert_plain(jobs, conn)
        out: list[EnqueueResult] = []
        for start in range(0, len(jobs), KEYED_BATCH):
            out += self._insert_keyed(jobs[start:start + KEYED_BATCH], conn)
        return out

    def insert_stream(self, count: int, jobs: Iterable[NewJob],
                      conn: Any = None) -> list[EnqueueResult]:
        if count < COPY_MIN_ROWS:
            return self.insert(list(jobs), conn)
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
            try:
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
            except psycopg.errors.InvalidColumnReference:
                if not self._relayout(conn):
                    raise
        raise StorageError("could not settle unique keys after 5 tries; the key is contended")

    def _relayout(self, conn: Any) -> bool:
        """After an ON CONFLICT found no unique index: whether the jobs table was
        partitioned since this store connected (its keyed inserts now go to jobs_hot)."""
        before = self._core.partitioned
        with self._conn(conn) as c:
            return self._core.find_layout(c) and not before

    def _dedup_params(self, jobs: list[NewJob]) -> dict[str, Any]:
        return self._p(
            tasks=[j.task for j in jobs], queues=[j.queue for j in jobs],
            args=[j.args_json for j in jobs], priorities=[j.priority for j in jobs],
            max_attempts=[j.max_attempts for j in jobs], run_ats=[j.run_at for j in jobs],
            timeouts=[j.timeout for j in jobs], metas=[j.meta_json for j in jobs],
            channel=self.channel, **dedup_params(jobs))

    def _insert_dedup(self, jobs: list[NewJob], conn: Any) -> list[EnqueueResult]:
        """Jobs whose key the unique_keys table holds: one statement per KEYED_BATCH,
        the function insert_dedup (functions.sql) settling each key in order."""
        out: list[EnqueueResult] = []
        for start in range(0, len(jobs), KEYED_BATCH):
            params = self._dedup_params(jobs[start:start + KEYED_BATCH])
            with self._conn(conn) as c:
                out += [EnqueueResult(r[0], r[1]) for r in
                        c.execute(self.q["jobs_insert_dedup"], params).fetchall()]
        return out

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

    def insert_marked(self, c: psycopg.Connection[Any], jobs: list[NewJob],
                      marks: list[Mark]) -> list[EnqueueResult]:
        """A graph's or a group's jobs written whole by COPY, marks included: no update
        of the rows just written (a group of 10,000 spent 80 ms there)."""
        if any(j.unique_key or j.dedup for j in jobs):
            return super().insert_marked(c, jobs, marks)
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

    def claim(self, queue: str, limit: int, worker_id: str,
              lease_seconds: float) -> list[ClaimedJob]:
        return self._claims.claim(ClaimKind.PLAIN, queue, limit, worker_id, lease_seconds,
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

    def complete_many(self, outcomes: list[Outcome]) -> set[int]:
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
            channel=self.channel,
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
                        self._cascade.settle_groups(c, groups)
                    if watched:
                        self._cascade.resolve(c, watched, finished=True)
                except psycopg.Error as exc:  # the outcomes are written; the sweep and
                    # the waiters' own polling finish this
                    log.warning("could not resolve the dependents of %s (groups %s) yet: %s",
                                watched, groups, exc)
        return done

    def heartbeat(self, worker_id: str, lease_seconds: float,
                  held: list[tuple[int, int]]) -> list[tuple[int, int, bool]]:
        # Never prepared: the generic plan guesses 10 held pairs and loops over them for
        # every running job of the worker (16 ms for 200 pairs instead of 3 ms).
        with self._conn() as c:
            rows = c.execute(self.q["jobs_heartbeat"], self._p(
                worker=worker_id, lease=lease_seconds, ids=[h[0] for h in held],
                attempts=[h[1] for h in held]), prepare=False).fetchall()
            if any(r[0] is None for r in rows):  # its workers row is gone
                self._fleet.worker_back(c, worker_id)
        return held_jobs([r for r in rows if r[0] is not None])

    def release_unknown(self, worker_id: str, queue: str,
                        held: list[tuple[int, int]]) -> list[int]:
        with self._conn() as c:
            rows = c.execute(self.q["jobs_release_unknown"], self._p(
                worker=worker_id, queue=queue, ids=[h[0] for h in held],
                attempts=[h[1] for h in held]), prepare=False).fetchall()
            if rows:
                c.execute(self.q["jobs_notify"], {"channel": self.channel, "queues": [queue]})
        return [r[0] for r in rows]

    def written(self, outcomes: list[Outcome]) -> set[int]:
        if not outcomes:
            return set()
        with self._conn() as c:
            rows = c.execute(self.q["jobs_written"], {
                "ids": [o.job_id for o in outcomes], "attempts": [o.attempt for o in outcomes],
                "states": [o.state.value for o in outcomes]}).fetchall()
        return {r[0] for r in rows}

    def rescue(self, limit: int = 1000) -> list[RescuedJob]:
        with self._conn() as c:
            rows = c.execute(self.q["jobs_rescue"], self._p(limit=limit)).fetchall()
        return rescued_jobs(rows)

    def hand_back(self, worker_id: str, jobs: list[tuple[int, int]],
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

    def get(self, job_id: int) -> Job:
        with self._conn() as c:
            cur = c.cursor(row_factory=dict_row)
            row = cur.execute(self.q["jobs_get"], {"id": job_id}).fetchone()
        if row is None:
            raise JobNotFoundError(f"no job with id {job_id}")
        return job_from_row(row, aware, decoded)

    def prune(self, finished_older_than: float, dead_older_than: float,
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


    # -- insert from asyncio code -----------------------------------------------------

    async def insert_async(self, jobs: list[NewJob], conn: Any = None
                           ) -> list[EnqueueResult]:
        """:meth:`insert` on the core's async pool (postgres/async_pool.py), or in
        ``conn``'s transaction (a ``psycopg.AsyncConnection``): the same statements as
        the sync path."""
        if not jobs:
            return []
        if any(j.dedup for j in jobs):  # (rare from asyncio code: one statement each way)
            held = [j for j in jobs if j.dedup is not None]
            async with self._aconn(conn) as c:
                rows = await (await c.execute(self.q["jobs_insert_dedup"],
                                              self._dedup_params(held))).fetchall()
            by_dedup = iter([EnqueueResult(r[0], r[1]) for r in rows])
            rest = iter(await self.insert_async([j for j in jobs if j.dedup is None], conn))
            return [next(by_dedup) if j.dedup is not None else next(rest) for j in jobs]
        if len(jobs) == 1 and not jobs[0].unique_key:
            j = jobs[0]
            async with self._aconn(conn) as c:
                cur = await c.execute(self.q["jobs_insert_one"], self._p(
                    queue=j.queue, task=j.task, args=j.args_json, priority=j.priority,
                    max_attempts=j.max_attempts, run_at=j.run_at, timeout=j.timeout,
                    meta=j.meta_json, channel=self.channel,
                    notify=due_wakeup(j)))
                one = await cur.fetchone()
            assert one is not None
            return [EnqueueResult(one[0], True)]
        params = self._p(
            tasks=[j.task for j in jobs], queues=[j.queue for j in jobs],
            args=[j.args_json for j in jobs], priorities=[j.priority for j in jobs],
            max_attempts=[j.max_attempts for j in jobs], run_ats=[j.run_at for j in jobs],
            unique_keys=[j.unique_key for j in jobs], timeouts=[j.timeout for j in jobs],
            metas=[j.meta_json for j in jobs])
        wakeups = due_wakeups(jobs)  # the sync insert's: one share per due job
        for _ in range(5):
            try:
                async with self._aconn(conn) as c, c.transaction():
                    rows = await (await c.execute(self.q["jobs_insert"], params)).fetchall()
                    missing = keys_taken(jobs, rows)
                    found = await (await c.execute(
                        self.q["jobs_find_active_by_keys"], {"keys": missing})
                    ).fetchall() if missing else []
                    results = settle_keys(jobs, rows, missing, found)
                    if results is None:
                        continue  # a key's holder finished between insert and lookup
                    if wakeups:
                        await c.execute(self.q["jobs_notify"],
                                        {"channel": self.channel, "queues": wakeups})
                    return results
            except psycopg.errors.InvalidColumnReference:
                # partitioned since this store connected: a rare, short catalog read
                if not self._relayout(None):
                    raise
        raise StorageError("could not settle unique keys after 5 tries; the key is contended")

    def list(self, state: JobState | None = None, queue: str | None = None,
             task: str | None = None, limit: int = 50,
             before_id: int | None = None) -> list[Job]:
        params = {"state": state.value if state else None, "queue": queue, "task": task,
                  "before": before_id, "limit": limit}
        with self._conn() as c:
            cur = c.cursor(row_factory=dict_row)
            rows = cur.execute(self.q["jobs_list"], params).fetchall()
        return [job_from_row(r, aware, decoded) for r in rows]
