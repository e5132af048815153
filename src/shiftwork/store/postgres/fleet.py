"""PostgreSQL's fleet (``store.fleet``): the shared writes and leader lease
(store/fleet.py), and its reads of the worker registry."""

from __future__ import annotations

from shiftwork.model.records import WorkerInfo
from shiftwork.store.fleet import FleetWrites
from shiftwork.store.postgres.core import PostgresCore
from shiftwork.store.rows import aware


class PostgresFleet(FleetWrites):
    """The worker registry and the leader lease on the engine's connections."""

    _core: PostgresCore

    def workers_list(self) -> list[WorkerInfo]:
        with self._core._conn() as c:
            rows = c.execute(self._core.q["workers_list"]).fetchall()
        return [WorkerInfo(r[0], r[1], r[2], r[3], aware(r[4]), aware(r[5]),  # type: ignore[arg-type]
                           None if r[6] is None else frozenset(r[6])) for r in rows]

    def workers_prune(self, stale_after: float) -> int:
        with self._core._conn() as c:
            return int(c.execute(self._core.q["workers_prune"],
                                 self._core._p(stale=stale_after)).rowcount)
