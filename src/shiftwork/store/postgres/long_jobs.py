"""PostgreSQL: checkpoints and progress (fenced by attempt), paused queues, effect keys."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

import psycopg

from ...records import EffectRecord, Touch
from ..rows import aware, log_rejected

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

    def jobs_touch(self, job_id: int, attempt: int, lease_seconds: float, *,
                   checkpoint: str | None = None, set_checkpoint: bool = False,
                   progress: str | None = None, yield_if_paused: bool = False,
                   conn: Any = None) -> Touch | None:
        params = self._p(id=job_id, attempt=attempt, lease=lease_seconds,
                         set_checkpoint=set_checkpoint, checkpoint=checkpoint, progress=progress)
        with self._conn(conn) as c:
            row = c.execute(self.q["jobs_touch"], params).fetchone()
            if row is None:
                log_rejected("checkpoint" if set_checkpoint else "progress", [(job_id, attempt)])
                return None
            cancel, paused = bool(row[0]), bool(row[1])
            yielded = False
            if paused and yield_if_paused and not cancel:
                yielded = c.execute(self.q["jobs_yield"], self._p(
                    id=job_id, attempt=attempt)).fetchone() is not None
        return Touch(cancel_requested=cancel, paused=paused, yielded=yielded)

    def queues_set_paused(self, queue: str, paused: bool) -> None:
        with self._conn() as c:
            c.execute(self.q["queues_set_paused"], self._p(queue=queue, paused=paused))
            if not paused:
                c.execute(self.q["jobs_notify"], {"channel": self.channel, "queues": [queue]})

    def queues_paused(self) -> set[str]:
        with self._conn() as c:
            return {r[0] for r in c.execute(self.q["queues_paused"])}

    def effect_keys_insert(self, key: str, job_id: int | None, attempt: int | None,
                           keep_seconds: float, result: str | None = None,
                           conn: Any = None) -> bool:
        with self._conn(conn) as c:
            row = c.execute(self.q["effect_keys_insert"], self._p(
                key=key, job_id=job_id, attempt=attempt, result=result,
                keep=keep_seconds)).fetchone()
        return row is not None

    def effect_keys_set_result(self, key: str, result: str, conn: Any = None) -> None:
        with self._conn(conn) as c:
            c.execute(self.q["effect_keys_set_result"], {"key": key, "result": result})

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
