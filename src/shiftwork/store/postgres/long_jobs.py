"""PostgreSQL: paused queues, reading effect keys, the caller's transaction
(touch and effect key writes: ../long_jobs.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

import psycopg

from shiftwork.model.records import EffectRecord
from shiftwork.store.rows import aware

if TYPE_CHECKING:
    from psycopg import Connection


class PostgresLongJobs:
    """Mixed into :class:`PostgresStore`; the SQL is in ``long_jobs.sql``."""

    q: dict[str, str]
    channel: str

    if TYPE_CHECKING:
        def _conn(self, conn: Any = None) -> AbstractContextManager[Connection[Any]]: ...
        def _p(self, **params: Any) -> dict[str, Any]: ...

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection inside a transaction: commits on exit, rolls back on error."""
        with self._conn() as c, c.transaction():
            yield c

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
            return c.execute(self.q["effect_keys_prune"], self._p(limit=limit)).rowcount
