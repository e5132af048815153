"""SQLite's jobs (``store.jobs``): insert (uniform batches, row arrays, keyed one by
one), the plain claim, completion, heartbeat, rescue, hand-back, the reads of jobs and
queues, and the rate buckets, on the engine core's connection per thread. Retry and
cancel are written once (store/jobs.py)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from shiftwork.core.errors import JobNotFoundError, StorageError
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
from shiftwork.store.base import ClaimStatements, FleetStatements
from shiftwork.store.jobs import JobsCommon, error_json, held_jobs, rescued_jobs, split_dedup
from shiftwork.store.rows import from_ts, job_from_row, loads, queue_stats_from_rows
from shiftwork.store.sqlite.core import SQLiteCore
from shiftwork.store.sqlite.deps import SQLiteCascade, tally


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


#: Outcomes written per transaction (see complete_many).
COMPLETE_BATCH = 200
_NO_FLOW = ClaimFlow()


class SQLiteJobs(JobsCommon):
    """The jobs statements on a SQLite core's connections. A completion resolves its
    dependents in its own transaction (``cascade``), a heartbeat registers a pruned
    worker again (``fleet``), the plain claim is ``claims``' one statement."""

    def __init__(self, core: SQLiteCore, cascade: SQLiteCascade, fleet: FleetStatements,
                 claims: ClaimStatements) -> None:
        super().__init__(core, cascade)
        self._core = core  # .conn: this thread's connection
        self.q = core.q
        self._tx = core._tx
        self._now = core._now
        self._clock = core.clock
        self._cascade: SQLiteCascade = cascade
        self._fleet = fleet
        self._claims = claims

    # -- insert ------------------------------------------------------------------------

    def insert(self, jobs: list[NewJob], conn: Any = None) -> list[EnqueueResult]:
        now = self._now()
        if any(j.dedup for j in jobs):
            return split_dedup(jobs, lambda js: self._insert_batches(js, now, conn),
                               lambda js: self.insert(js, conn))
        if len(jobs) > 1 and not any(j.unique_key for j in jobs):
            return self._insert_plain(jobs, now, conn)
        return self._insert_batches(jobs, now, conn)

    def _insert_batches(self, jobs: list[NewJob], now: float, conn: Any
                        ) -> list[EnqueueResult]:
        results: list[EnqueueResult] = []
        for start in range(0, len(jobs), PLAIN_BATCH):  # short write-lock holds, as below
            results += self._insert_keyed(jobs[start:start + PLAIN_BATCH], now, conn)
        return results

    def _insert_keyed(self, jobs: list[NewJob], now: float, conn: Any) -> list[EnqueueResult]:
        """Jobs one by one: an active job with the same unique key wins."""
        results: list[EnqueueResult] = []
        keyed, unkeyed = self.q["jobs_insert"], self.q["jobs_insert_unkeyed"]
        with self._tx(conn) as c:
            for j in jobs:
                if j.dedup is not None:
                    results.append(self._insert_dedup(c, j, now))
                    continue
                row = c.execute(keyed if j.unique_key else unkeyed, {
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

    def _insert_dedup(self, c: sqlite3.Connection, j: NewJob, now: float) -> EnqueueResult:
        """One job whose key the unique_keys table holds, under the write lock: take the
        key (or find it held), then insert the job or hand back its holder; a debounced
        holder that still waits takes the new arguments and run_at instead."""
        d = j.dedup
        assert d is not None
        key = {"key": d.key, "now": now}
        rule = {**key, "states": None if d.states is None else ",".join(d.states),
                "expires": None if d.hold_for is None else now + d.hold_for}
        taken = c.execute(self.q["unique_keys_take"], rule).fetchone()
        if taken is None:  # the key holds
            holder = c.execute(self.q["unique_keys_holder"], key).fetchone()[0]
            if d.debounce is None or c.execute(self.q["jobs_debounce"], {
                    "id": holder, "args": j.args_json, "run_at": now + d.debounce}).rowcount:
                return EnqueueResult(holder, False)
            # a debounce whose holder left the waiting states (a unique_for holder can
            # run and still hold): the key passes to the new job
        run_at = None if d.debounce is None else now + d.debounce
        row = c.execute(self.q["jobs_insert"], {
            "queue": j.queue, "task": j.task, "args": j.args_json, "now": now,
            "run_at": to_ts(j.run_at) if run_at is None else run_at, "priority": j.priority,
            "max_attempts": j.max_attempts, "unique_key": None, "timeout": j.timeout,
            "meta": j.meta_json}).fetchone()
        c.execute(self.q["unique_keys_point"], {**rule, "id": row[0]})
        return EnqueueResult(row[0], True)

    def insert_stream(self, count: int, jobs: Iterable[NewJob],
                      conn: Any = None) -> list[EnqueueResult]:
        # Built first, all of them: one thread would gain nothing from interleaving, and
        # the inserts commit in batches.
        return self.insert(list(jobs), conn)

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

    def insert_marked(self, c: sqlite3.Connection, jobs: list[NewJob], marks: list[Mark]
                      ) -> list[EnqueueResult]:
        """A graph's or a group's jobs in one statement, marks included (no update of the
        rows just written). Inside the graph's transaction: the write lock is held."""
        if any(j.unique_key or j.dedup for j in jobs):
            return super().insert_marked(c, jobs, marks)
        now = self._now()
        runs = _runs(jobs, marks)
        if len(runs) <= UNIFORM_RUNS:  # a group's members (and its callback)
            return [r for a, b in runs for r in self._insert_uniform(c, jobs[a:b], marks[a], now)]
        rows = _compact_json([(*_plain_row(j, now), m.deps_pending, int(m.watched), m.group_id,
                               0 if m.group_id is None else 1)
                              for j, m in zip(jobs, marks, strict=True)])
        return _inserted(c, c.execute(self.q["jobs_insert_marked"], {"rows": rows}), len(jobs))

    # -- claim / complete -----------------------------------------------------------------

    def claim(self, queue: str, limit: int, worker_id: str,
              lease_seconds: float) -> list[ClaimedJob]:
        return self._claims.claim(ClaimKind.PLAIN, queue, limit, worker_id, lease_seconds,
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
        rows = self._core.conn.execute(self.q["rate_buckets_list"]).fetchall()
        return [(r[0], float(r[1] or 0.0), from_ts(r[2] or 0.0))  # type: ignore[misc]
                for r in rows]

    def rate_buckets_clear(self, key: str) -> bool:
        with self._tx() as c:
            return c.execute(self.q["rate_buckets_clear"],
                             {"key": key, "now": self._now()}).rowcount > 0

    def complete_many(self, outcomes: list[Outcome]) -> set[int]:
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
        with self._tx() as c:
            now = self._now()  # under the write lock, as a claim's (claims.py)
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
            due = self._cascade.count_down(c, tally(
                (group_of[o.job_id], o.state is JobState.SUCCEEDED)
                for o in fenced if o.job_id in group_of and o.state in FINAL))
            if due:
                self._cascade.settle_groups(c, due)
            finished = [o.job_id for o in fenced if o.job_id in watched and o.state in FINAL]
            if finished:
                self._cascade.resolve(c, finished)
        return {o.job_id for o in fenced}

    def heartbeat(self, worker_id: str, lease_seconds: float,
                  held: list[tuple[int, int]]) -> list[tuple[int, int, bool]]:
        now = self._now()
        with self._tx() as c:
            beat = c.execute(self.q["jobs_heartbeat_worker"], {"worker": worker_id, "now": now})
            if beat.rowcount == 0:  # its workers row is gone (pruned while it was stopped)
                self._fleet.worker_back(c, worker_id)
            rows = c.execute(self.q["jobs_heartbeat"], {
                "worker": worker_id, "now": now, "lease": lease_seconds,
                "held": json.dumps(held)}).fetchall()
        return held_jobs(rows)

    def release_unknown(self, worker_id: str, queue: str,
                        held: list[tuple[int, int]]) -> list[int]:
        now = self._clock.now()
        with self._tx() as c:
            rows = c.execute(self.q["jobs_release_unknown"], {
                "worker": worker_id, "queue": queue, "held": json.dumps(held),
                "now": now.timestamp(), "now_iso": now.isoformat()}).fetchall()
        return [r[0] for r in rows]

    def written(self, outcomes: list[Outcome]) -> set[int]:
        if not outcomes:
            return set()
        rows = self._core.conn.execute(self.q["jobs_written"], {"outcomes": json.dumps(
            [[o.job_id, o.attempt, o.state.value] for o in outcomes])}).fetchall()
        return {r[0] for r in rows}

    def rescue(self, limit: int = 1000) -> list[RescuedJob]:
        now = self._clock.now()
        params = {"now": now.timestamp(), "now_iso": now.isoformat(), "limit": limit}
        with self._tx() as c:
            c.execute(self.q["jobs_rescue_flows"], params)
            rows = c.execute(self.q["jobs_rescue"], params).fetchall()
        return rescued_jobs(rows)

    def hand_back(self, worker_id: str, jobs: list[tuple[int, int]],
                  reason: HandBack = SHUTDOWN) -> int:
        now = self._clock.now()
        count = 0
        with self._tx() as c:
            for job_id, attempt in jobs:
                count += c.execute(self.q["jobs_hand_back"], {
                    "id": job_id, "attempt": attempt, "worker": worker_id,
                    "now": now.timestamp(), "now_iso": now.isoformat(), "kind": reason.kind,
                    "type": reason.type, "message": reason.message}).rowcount
        return count

    # -- inspection and manual actions ----------------------------------------------

    def get(self, job_id: int) -> Job:
        row = self._core.conn.execute(self.q["jobs_get"], {"id": job_id}).fetchone()
        if row is None:
            raise JobNotFoundError(f"no job with id {job_id}")
        return job_from_row(dict(row), from_ts, loads)

    def prune(self, finished_older_than: float, dead_older_than: float,
              limit: int = 10_000) -> int:
        with self._tx() as c:
            return c.execute(self.q["jobs_prune"], {
                "now": self._now(), "finished": finished_older_than, "dead": dead_older_than,
                "limit": limit}).rowcount

    def queues_stats(self, include_finished: bool = True) -> list[QueueStats]:
        c = self._core.conn
        now = self._now()
        active = c.execute(self.q["queues_stats"], {"now": now}).fetchall()
        finished = {r[0]: (r[1], r[2]) for r in c.execute(self.q["queues_finished_counts"])
                    } if include_finished else {}
        return queue_stats_from_rows(active, finished)

    async def insert_async(self, jobs: list[NewJob], conn: Any = None
                           ) -> list[EnqueueResult]:
        """:meth:`insert` from asyncio code: sqlite3 has no async driver, so the insert
        runs in a thread (with ``conn``: in the caller's thread, on its connection, as
        sqlite3 connections belong to the thread that made them)."""
        if conn is not None:
            return self.insert(jobs, conn)
        return await asyncio.to_thread(self.insert, jobs)

    def list(self, state: JobState | None = None, queue: str | None = None,
             task: str | None = None, limit: int = 50,
             before_id: int | None = None) -> list[Job]:
        params = {"state": state.value if state else None, "queue": queue, "task": task,
                  "before": before_id, "limit": limit}
        rows = self._core.conn.execute(self.q["jobs_list"], params)
        return [job_from_row(dict(r), from_ts, loads) for r in rows]
