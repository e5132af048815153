"""The fleet (``store.fleet``): the worker registry and the named leader lease, written once
over each engine's primitives (store/core.py); the SQL is in each engine's
``jobs.sql``. Each engine adds its reads (``postgres/fleet.py``, ``sqlite/fleet.py``)."""

from __future__ import annotations

import json
from typing import Any

from shiftwork.store.core import EngineCore

#: The lease the fleet's leader holds (the scheduler's writes check it too).
LEADER_NAME = "shiftwork.leader"


class FleetWrites:
    """The fleet's writes, on the engine store's sessions."""

    def __init__(self, core: EngineCore) -> None:
        self._core = core  # the engine's store: _session, _one (store/core.py)
        self._session = core._session
        self._one = core._one
        #: worker id -> its workers_upsert parameters, for :meth:`worker_back`.
        self._registrations: dict[str, dict[str, Any]] = {}

    def workers_upsert(self, worker_id: str, host: str, pid: int, queues: dict[str, int],
                       tasks: list[str] | None = None) -> None:
        params = {"id": worker_id, "host": host, "pid": pid, "queues": json.dumps(queues),
                  "tasks": None if tasks is None else json.dumps(sorted(tasks))}
        with self._session() as c:
            self._one(c, "workers_upsert", **params)
        self._registrations[worker_id] = params

    def workers_delete(self, worker_id: str) -> None:
        with self._session() as c:
            self._one(c, "workers_delete", id=worker_id)
        self._registrations.pop(worker_id, None)

    def worker_back(self, c: Any, worker_id: str) -> None:
        """Register again a worker whose heartbeat found its row gone: the leader prunes
        rows that missed their beats for ``max(3 heartbeats, lease)``, which any outage
        longer than that (a failover) makes of every worker but the first one back. An
        unregistered worker is invisible to the fleet (health, wake-up shares)."""
        params = self._registrations.get(worker_id)
        if params is not None:  # (None: registered by another store object, not ours)
            self._one(c, "workers_upsert", **params)

    def leader_acquire(self, name: str, owner: str, ttl: float) -> int | None:
        with self._session() as c:
            row = self._one(c, "leader_acquire", name=name, owner=owner, ttl=ttl)
        return int(row[0]) if row else None

    def leader_release(self, name: str, owner: str) -> None:
        with self._session() as c:
            self._one(c, "leader_release", name=name, owner=owner)
