"""SQLite: paused queues, reading effect keys, the caller's transaction
(touch and effect key writes: ../long_jobs.py); the caller's transaction is the store's."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from shiftwork.model.records import EffectRecord
from shiftwork.store.long_jobs import LongJobsWrites
from shiftwork.store.sqlite.core import SQLiteCore


class SQLiteLongJobs(LongJobsWrites):
    """``store.long_jobs`` on SQLite; the SQL is in ``long_jobs.sql``."""

    _core: SQLiteCore

    def __init__(self, core: SQLiteCore) -> None:
        super().__init__(core)
        self.q = core.q
        self._tx = core._tx
        self._now = core._now

    def queues_set_paused(self, queue: str, paused: bool) -> None:
        with self._tx() as c:
            c.execute(self.q["queues_set_paused"],
                      {"queue": queue, "paused": int(paused), "now": self._now()})

    def queues_paused(self) -> set[str]:
        return {r[0] for r in self._core.conn.execute(self.q["queues_paused"])}

    def effect_keys_get(self, key: str, conn: Any = None) -> EffectRecord | None:
        row = (conn or self._core.conn).execute(self.q["effect_keys_get"], {"key": key}).fetchone()
        if row is None:
            return None
        return EffectRecord(
            key=key, result=json.loads(row[0]) if row[0] is not None else None, job_id=row[1],
            attempt=row[2], created_at=datetime.fromtimestamp(row[3], UTC),
            expires_at=datetime.fromtimestamp(row[4], UTC))

    def effect_keys_prune(self, limit: int = 10_000) -> int:
        with self._tx() as c:
            return int(c.execute(self.q["effect_keys_prune"],
                                 {"now": self._now(), "limit": limit}).rowcount)
