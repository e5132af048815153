"""PostgreSQL's claim statements (``store.claims``): the kinds that are one statement, and
the named steps the claim loops of flow/ run in one transaction (flow/claiming.py
chooses between them)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from shiftwork.model.limits import ClaimFlow, ClaimKind, RateLimit
from shiftwork.model.records import ClaimedJob
from shiftwork.store.jobs import Row, claimed_jobs
from shiftwork.store.postgres.arrays import float_array, text_array
from shiftwork.store.postgres.core import PostgresCore

#: The named query of each claim kind that runs in one statement.
_ONE_STATEMENT = {ClaimKind.PLAIN: "jobs_claim", ClaimKind.QUEUE_RATE: "jobs_claim_queue_rate",
                  ClaimKind.TASK_RATES: "jobs_claim_task_rates", ClaimKind.FAIR: "jobs_claim_fair"}


class PostgresClaims:
    """The claim statements on a PostgreSQL store's connections."""

    def __init__(self, engine: PostgresCore) -> None:
        self._e = engine
        self._buckets_made: set[str] = set()  # queue/task buckets known to exist (never deleted)

    def in_one_statement(self, kind: ClaimKind) -> bool:
        return kind in _ONE_STATEMENT

    def claim(self, kind: ClaimKind, queue: str, limit: int, worker_id: str,
              lease_seconds: float, flow: ClaimFlow) -> list[ClaimedJob]:
        # A function each (migrations/functions.sql), prepared: planning it would cost
        # more than running it.
        e = self._e
        params = e._p(queue=queue, limit=limit, worker=worker_id, lease=lease_seconds)
        with e._conn() as c:
            if kind is ClaimKind.QUEUE_RATE:
                assert flow.queue_rate is not None
                params |= self._queue_rate_params(c, queue, flow.queue_rate)
            elif kind is ClaimKind.TASK_RATES:
                params |= self._task_rates_params(c, flow.task_rates)
            rows = c.execute(e.q[_ONE_STATEMENT[kind]], params,
                             prepare=e._prepare).fetchall()
        return claimed_jobs(rows)

    @contextmanager
    def begin(self, queue: str, worker_id: str, lease_seconds: float
              ) -> Iterator[PostgresClaimTx]:
        with self._e._conn() as c, c.transaction():
            yield PostgresClaimTx(self._e, c, queue, worker_id, lease_seconds)

    def _ensure_bucket(self, c: psycopg.Connection[Any], key: str, capacity: float) -> None:
        """Make a queue's or task's bucket (full) if missing: the one-statement claims lock
        it, so it must exist first."""
        if key not in self._buckets_made:
            c.execute(self._e.q["rate_bucket_ensure"], self._e._p(key=key, capacity=capacity))
            self._buckets_made.add(key)

    def _queue_rate_params(self, c: psycopg.Connection[Any], queue: str,
                           rate: RateLimit) -> dict[str, Any]:
        key = f"queue:{queue}"
        self._ensure_bucket(c, key, rate.capacity)
        return {"key": key, "capacity": rate.capacity, "rate": rate.rate}

    def _task_rates_params(self, c: psycopg.Connection[Any],
                           rates: dict[str, RateLimit]) -> dict[str, Any]:
        tasks = sorted(rates)  # claimers lock the buckets in one order
        for task in tasks:
            self._ensure_bucket(c, f"task:{task}", rates[task].capacity)
        return {"tasks": text_array(tasks),  # (literals: cheaper to send than lists)
                "capacities": float_array(rates[t].capacity for t in tasks),
                "rates": float_array(rates[t].rate for t in tasks)}


class PostgresClaimTx:
    """A claim's statements on ``c``, inside its transaction (never prepared but the common
    claim and the buckets': planned for the values)."""

    def __init__(self, engine: PostgresCore, c: psycopg.Connection[Any], queue: str,
                 worker: str, lease: float) -> None:
        self._e, self._c, self._queue, self._worker, self._lease = (
            engine, c, queue, worker, lease)

    def lock_task(self, task: str) -> None:
        self._c.execute(self._e.q["jobs_lock_task_limit"], {"task": task})

    def running(self, task: str) -> int:
        self.lock_task(task)
        row = self._c.execute(self._e.q["jobs_count_running_task"], {"task": task}).fetchone()
        return int(row[0]) if row else 0

    def claim(self, n: int, only_task: str | None, exclude: list[str]) -> list[Row]:
        e = self._e
        if only_task is None and not exclude:  # a queue-wide limit only: the common claim
            return self._c.execute(e.q["jobs_claim"], e._p(
                queue=self._queue, limit=n, worker=self._worker, lease=self._lease),
                prepare=e._prepare).fetchall()
        return self._c.execute(e.q["jobs_claim_filtered"], e._p(
            queue=self._queue, limit=n, worker=self._worker, lease=self._lease,
            only_task=only_task, exclude=exclude), prepare=False).fetchall()

    def bucket(self, key: str, rate: RateLimit) -> float:
        e = self._e
        row = self._c.execute(e.q["rate_bucket_lock"], e._p(
            key=key, capacity=rate.capacity, rate=rate.rate), prepare=e._prepare).fetchone()
        assert row is not None  # made (full) if missing, and locked, by the statement
        return float(row[0])

    def set_bucket(self, key: str, tokens: float) -> None:
        e = self._e
        self._c.execute(e.q["rate_bucket_set"], e._p(key=key, tokens=tokens),
                        prepare=e._prepare)

    def group_running(self, task: str) -> dict[str, int]:
        return {r[0]: int(r[1])
                for r in self._c.execute(self._e.q["jobs_group_running"], {"task": task})}

    def candidates(self, task: str, n: int, after: tuple[Any, Any, int] | None) -> list[Row]:
        return self._c.execute(self._e.q["jobs_group_candidates"], self._e._p(
            queue=self._queue, task=task, limit=n, after_priority=after and after[0],
            after_run_at=after and after[1], after_id=after and after[2]),
            prepare=False).fetchall()

    def claim_ids(self, ids: list[int]) -> list[Row]:
        return self._c.execute(self._e.q["jobs_claim_ids"], self._e._p(
            ids=ids, worker=self._worker, lease=self._lease), prepare=False).fetchall()

    # -- a fair queue's ---------------------------------------------------------------

    def fair_cursor(self) -> tuple[str, int]:
        c, q, queue = self._c, self._e.q, self._queue
        row = c.execute(q["fair_cursor_lock"], {"queue": queue}).fetchone()
        if row is None:  # the queue's first fair claim
            c.execute(q["fair_cursor_ensure"], {"queue": queue})
            row = c.execute(q["fair_cursor_lock"], {"queue": queue}).fetchone()
        assert row is not None  # ensured just before, and never deleted
        return str(row[0]), int(row[1])

    def fair_set_cursor(self, group: str, served: int) -> None:
        self._c.execute(self._e.q["fair_cursor_set"],
                        {"queue": self._queue, "group": group, "served": served})

    def fair_groups(self, after: str, n: int) -> list[str]:
        return [r[0] for r in self._c.execute(self._e.q["fair_groups"],
                                              {"queue": self._queue, "after": after, "n": n})]

    def fair_heads(self, groups: list[str], take: list[int], skip: list[int]) -> list[Row]:
        return self._c.execute(self._e.q["fair_heads"], self._e._p(
            queue=self._queue, groups=groups, take=take, skip=skip)).fetchall()

    def fair_ungrouped(self, take: int, skip: int, peek: int) -> list[Row]:
        return self._c.execute(self._e.q["fair_ungrouped"], self._e._p(
            queue=self._queue, take=take, skip=skip, peek=peek)).fetchall()
