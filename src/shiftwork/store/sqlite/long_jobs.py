"""SQLite: checkpoints and progress (fenced by attempt), paused queues, effect keys."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ...records import EffectRecord, Touch
from ..rows import log_rejected


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

    def jobs_touch(self, job_id: int, attempt: int, lease_seconds: float, *,
                   checkpoint: str | None = None, set_checkpoint: bool = False,
                   progress: str | None = None, yield_if_paused: bool = False,
                   conn: Any = None) -> Touch | None:
        now = self._now()
        with self._tx(conn) as c:
            row = c.execute(self.q["jobs_touch"], {
                "id": job_id, "attempt": attempt, "lease": lease_seconds, "now": now,
                "set_checkpoint": set_checkpoint, "checkpoint": checkpoint,
                "progress": progress}).fetchone()
            if row is None:
                log_rejected("checkpoint" if set_checkpoint else "progress", [(job_id, attempt)])
                return None
            cancel, paused = bool(row[0]), bool(row[1])
            yielded = False
            if paused and yield_if_paused and not cancel:
                yielded = c.execute(self.q["jobs_yield"], {
                    "id": job_id, "attempt": attempt, "now": now,
                    "now_iso": datetime.fromtimestamp(now, UTC).isoformat()}).fetchone() is not None
        return Touch(cancel_requested=cancel, paused=paused, yielded=yielded)

    def queues_set_paused(self, queue: str, paused: bool) -> None:
        with self._tx() as c:
            c.execute(self.q["queues_set_paused"],
                      {"queue": queue, "paused": int(paused), "now": self._now()})

    def queues_paused(self) -> set[str]:
        return {r[0] for r in self.conn.execute(self.q["queues_paused"])}

    def effect_keys_insert(self, key: str, job_id: int | None, attempt: int | None,
                           keep_seconds: float, result: str | None = None,
                           conn: Any = None) -> bool:
        with self._tx(conn) as c:
            row = c.execute(self.q["effect_keys_insert"], {
                "key": key, "job_id": job_id, "attempt": attempt, "result": result,
                "keep": keep_seconds, "now": self._now()}).fetchone()
        return row is not None

    def effect_keys_set_result(self, key: str, result: str, conn: Any = None) -> None:
        with self._tx(conn) as c:
            c.execute(self.q["effect_keys_set_result"], {"key": key, "result": result})

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
