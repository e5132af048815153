"""SQLite's fleet (``store.fleet``): the shared writes and leader lease
(store/fleet.py), and its reads of the worker registry."""

from __future__ import annotations

import json

from shiftwork.model.records import WorkerInfo
from shiftwork.store.fleet import FleetWrites
from shiftwork.store.rows import from_ts
from shiftwork.store.sqlite.core import SQLiteCore


class SQLiteFleet(FleetWrites):
    """The worker registry and the leader lease on the engine's connections."""

    _core: SQLiteCore

    def workers_list(self) -> list[WorkerInfo]:
        return [WorkerInfo(r[0], r[1], r[2], json.loads(r[3]), from_ts(r[4]), from_ts(r[5]),  # type: ignore[arg-type]
                           None if r[6] is None else frozenset(json.loads(r[6])))
                for r in self._core.conn.execute(self._core.q["workers_list"])]

    def workers_prune(self, stale_after: float) -> int:
        with self._core._tx() as c:
            return int(c.execute(self._core.q["workers_prune"],
                                 {"now": self._core._now(), "stale": stale_after}).rowcount)
