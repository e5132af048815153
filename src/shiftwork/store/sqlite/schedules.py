"""SQLite primitives for the schedule store (the transactions live in ../schedules.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from ..schedules import TIME_COLUMNS, ScheduleStoreLogic


def _from_ts(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


class SQLiteSchedules(ScheduleStoreLogic):
    """Mixed into :class:`SQLiteStore`; uses its ``_tx``, ``conn``, ``_now`` and ``q``."""

    _tx: Any
    conn: Any
    _now: Any
    q: dict[str, str]

    @contextmanager
    def _s_tx(self) -> Iterator[Any]:
        with self._tx() as c:
            yield c

    @contextmanager
    def _s_read(self) -> Iterator[Any]:
        yield self.conn

    def _s_rows(self, c: Any, query: str, **params: Any) -> list[dict[str, Any]]:
        bound = {k: v.timestamp() if isinstance(v, datetime) else v for k, v in params.items()}
        bound["now"] = self._now()
        rows = [dict(r) for r in c.execute(self.q[query], bound).fetchall()]
        for r in rows:
            for k in TIME_COLUMNS.intersection(r):
                r[k] = _from_ts(r[k])
        return rows
