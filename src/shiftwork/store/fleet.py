"""The worker registry's writes and the named leader lease, written once over each engine's
primitives (store/engine_sql.py); the SQL is in each engine's ``jobs.sql``."""

from __future__ import annotations

import json

from .engine_sql import EngineSql


class FleetWrites(EngineSql):
    def workers_upsert(self, worker_id: str, host: str, pid: int, queues: dict[str, int],
                       tasks: list[str] | None = None) -> None:
        with self._session() as c:
            self._one(c, "workers_upsert", id=worker_id, host=host, pid=pid,
                      queues=json.dumps(queues),
                      tasks=None if tasks is None else json.dumps(sorted(tasks)))

    def workers_delete(self, worker_id: str) -> None:
        with self._session() as c:
            self._one(c, "workers_delete", id=worker_id)

    def leader_acquire(self, name: str, owner: str, ttl: float) -> int | None:
        with self._session() as c:
            row = self._one(c, "leader_acquire", name=name, owner=owner, ttl=ttl)
        return int(row[0]) if row else None

    def leader_release(self, name: str, owner: str) -> None:
        with self._session() as c:
            self._one(c, "leader_release", name=name, owner=owner)
