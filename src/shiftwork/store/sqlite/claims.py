"""SQLite's claim statements (``store.claims``): the plain claim in one statement, and the
named steps the claim loops of flow/ run in one write transaction (flow/claiming.py
chooses). BEGIN IMMEDIATE serializes claimers: the write lock guards counts and tokens,
so every other kind is those loops here, each step costing no more than a statement."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from shiftwork.model.limits import ClaimFlow, ClaimKind, RateLimit
from shiftwork.model.records import ClaimedJob
from shiftwork.store.jobs import Row, claimed_jobs
from shiftwork.store.sqlite.core import SQLiteCore


class SQLiteClaims:
    """The claim statements on a SQLite store's connection."""

    def __init__(self, engine: SQLiteCore) -> None:
        self._e = engine

    def in_one_statement(self, kind: ClaimKind) -> bool:
        return kind is ClaimKind.PLAIN

    def claim(self, kind: ClaimKind, queue: str, limit: int, worker_id: str,
              lease_seconds: float, flow: ClaimFlow) -> list[ClaimedJob]:
        assert kind is ClaimKind.PLAIN, "SQLite claims every other kind by the loops"
        with self.begin(queue, worker_id, lease_seconds) as tx:
            rows = tx.claim(limit, None, [])
        return claimed_jobs(rows)

    @contextmanager
    def begin(self, queue: str, worker_id: str, lease_seconds: float
              ) -> Iterator[SQLiteClaimTx]:
        with self._e._tx() as c:
            # The time is read once the write lock is held: a claim that waited behind
            # another writer must not date its lease (and "due") from before the wait.
            now = self._e._now()
            yield SQLiteClaimTx(self._e.q, c, {"queue": queue, "worker": worker_id,
                                               "lease": lease_seconds, "now": now})


class SQLiteClaimTx:
    """A claim's statements on ``c``, inside its write transaction."""

    def __init__(self, q: dict[str, str], c: sqlite3.Connection, base: dict[str, Any]) -> None:
        self._q, self._c, self._base = q, c, base
        self._now, self._queue = base["now"], base["queue"]

    def lock_task(self, task: str) -> None:
        """Nothing to take: the write lock is held."""

    def running(self, task: str) -> int:
        return int(self._c.execute(self._q["jobs_count_running_task"],
                                   {"task": task}).fetchone()[0])

    def claim(self, n: int, only_task: str | None, exclude: list[str]) -> list[Row]:
        return self._c.execute(self._q["jobs_claim"], {
            **self._base, "limit": n, "only_task": only_task,
            "exclude": json.dumps(exclude)}).fetchall()

    def bucket(self, key: str, rate: RateLimit) -> float:
        c, q, now = self._c, self._q, self._now
        c.execute(q["rate_bucket_ensure"], {"key": key, "capacity": rate.capacity, "now": now})
        return float(c.execute(q["rate_bucket_lock"], {
            "key": key, "capacity": rate.capacity, "rate": rate.rate,
            "now": now}).fetchone()[0])

    def set_bucket(self, key: str, tokens: float) -> None:
        self._c.execute(self._q["rate_bucket_set"], {"key": key, "tokens": tokens,
                                                     "now": self._now})

    def group_running(self, task: str) -> dict[str, int]:
        return {str(r[0]): int(r[1])
                for r in self._c.execute(self._q["jobs_group_running"], {"task": task})}

    def candidates(self, task: str, n: int, after: tuple[Any, Any, int] | None) -> list[Row]:
        return self._c.execute(self._q["jobs_group_candidates"], {
            **self._base, "task": task, "limit": n,
            "after_priority": after and after[0], "after_run_at": after and after[1],
            "after_id": after and after[2]}).fetchall()

    def claim_ids(self, ids: list[int]) -> list[Row]:
        return self._c.execute(self._q["jobs_claim_ids"], {**self._base, "ids": json.dumps(ids)}
                               ).fetchall()

    # -- a fair queue's ---------------------------------------------------------------

    def fair_cursor(self) -> tuple[str, int]:
        self._c.execute(self._q["fair_cursor_ensure"], {"queue": self._queue})
        row = self._c.execute(self._q["fair_cursor_lock"], {"queue": self._queue}).fetchone()
        return str(row[0]), int(row[1])

    def fair_set_cursor(self, group: str, served: int) -> None:
        self._c.execute(self._q["fair_cursor_set"],
                        {"queue": self._queue, "group": group, "served": served})

    def fair_groups(self, after: str, n: int) -> list[str]:
        return [r[0] for r in self._c.execute(self._q["fair_groups"],
                                              {"queue": self._queue, "after": after, "n": n})]

    def fair_heads(self, groups: list[str], take: list[int], skip: list[int]) -> list[Row]:
        # In-process: one indexed query per group costs no round trip.
        rows: list[Row] = []
        for group, n, k in zip(groups, take, skip, strict=True):
            rows += self._c.execute(self._q["fair_heads"], {
                "queue": self._queue, "group": group, "take": n, "skip": k,
                "now": self._now}).fetchall()
        return rows

    def fair_ungrouped(self, take: int, skip: int, peek: int) -> list[Row]:
        return list(self._c.execute(self._q["fair_ungrouped"], {
            "queue": self._queue, "take": take, "skip": skip, "now": self._now,
            "peek": peek}))
