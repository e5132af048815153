"""SQLite: paused queues, reading effect keys, the caller's transaction
(touch and effect key writes: ../long_jobs.py)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from shiftwork.model.records import EffectRecord


class SQLiteLongJobs:
    """Mixed into :class:`SQLiteStore`; the SQL is in ``long_jobs.sql``."""

    q: dict[str, str]

    if TYPE_CHECKING:
        def _tx(self, conn: Any = None,
                immediate: bool = True) -> AbstractContextManager[sqlite3.Connection]: ...
        def _now(self) -> float: ...
        @property
        def conn(self) -> sqlite3.Connection: ...

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection in ``BEGIN IMMEDIATE``: commits on exit, rolls back on error.

        SQLite has one writer at a time: keep these transactions short.
        """
        with self._tx() as c:
            yield c

    def queues_set_paused(self, queue: str, paused: bool) -> None:
        with self._tx() as c:
            c.execute(self.q["queues_set_paused"],
                      {"queue": queue, "paused": int(paused), "now": self._now()})

    def queues_paused(self) -> set[str]:
        return {r[0] for r in self.conn.execute(self.q["queues_paused"])}

    def effect_keys_get(self, key: str, conn: Any = None) -> EffectRecord | None:
        row = (conn or self.conn).execute(self.q["effect_keys_get"], {"key": key}).fetchone()
        if row is None:
            return None
        return EffectRecord(
            key=key, result=json.loads(row[0]) if row[0] is not None else None, job_id=row[1],
            attempt=row[2], created_at=datetime.fromtimestamp(row[3], UTC),
            expires_at=datetime.fromtimestamp(row[4], UTC))

    def effect_keys_prune(self, limit: int = 10_000) -> int:
        with self._tx() as c:
            return c.execute(self.q["effect_keys_prune"],
                             {"now": self._now(), "limit": limit}).rowcount
