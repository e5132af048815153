"""SQLite primitives for the schedule store (the transactions live in ../schedules.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from shiftwork.store.schedules import TIME_COLUMNS, ScheduleStoreLogic

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def _micros(value: Any) -> int:
    # Integer microseconds: the SQL divides by 1e6, rounding exactly as timestamp() does,
    # so an instant written in a batch equals one bound directly (keys compare equal).
    if isinstance(value, datetime):
        return (value - _EPOCH) // _MICROSECOND
    raise TypeError(f"cannot encode {value!r} for a batch statement")


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

    def _s_instant(self, value: datetime | None) -> Any:
        return None if value is None else _micros(value)

    def _s_json(self, value: Any) -> str:
        return json.dumps(value, separators=(",", ":"), default=_micros)
