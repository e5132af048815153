"""PostgreSQL: paused queues, reading effect keys, the caller's transaction
(touch and effect key writes: ../long_jobs.py); the caller's transaction is the store's."""

from __future__ import annotations

from typing import Any

from shiftwork.model.records import EffectRecord
from shiftwork.store.long_jobs import LongJobsWrites
from shiftwork.store.postgres.core import PostgresCore
from shiftwork.store.rows import aware


class PostgresLongJobs(LongJobsWrites):
    """``store.long_jobs`` on PostgreSQL; the SQL is in ``long_jobs.sql``."""

    def __init__(self, core: PostgresCore) -> None:
        super().__init__(core)
        self.q = core.q
        self._conn = core._conn
        self._p = core._p
        self.channel = core.channel

    def queues_set_paused(self, queue: str, paused: bool) -> None:
        with self._conn() as c:
            c.execute(self.q["queues_set_paused"], self._p(queue=queue, paused=paused))
            if not paused:
                c.execute(self.q["jobs_notify"], {"channel": self.channel, "queues": [queue]})

    def queues_paused(self) -> set[str]:
        with self._conn() as c:
            return {r[0] for r in c.execute(self.q["queues_paused"])}

    def effect_keys_get(self, key: str, conn: Any = None) -> EffectRecord | None:
        with self._conn(conn) as c:
            row = c.execute(self.q["effect_keys_get"], {"key": key}).fetchone()
        if row is None:
            return None
        return EffectRecord(key=key, result=row[0], job_id=row[1], attempt=row[2],
                            created_at=aware(row[3]), expires_at=aware(row[4]))  # type: ignore[arg-type]

    def effect_keys_prune(self, limit: int = 10_000) -> int:
        with self._conn() as c:
            return int(c.execute(self.q["effect_keys_prune"], self._p(limit=limit)).rowcount)
