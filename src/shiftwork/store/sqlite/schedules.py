"""SQLite's schedule statements (``store.schedules``): the transactions that use them are
the schedule component's (schedules/firing.py, schedules/reconcile.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from shiftwork.store.rows import TIME_COLUMNS
from shiftwork.store.sqlite.core import SQLiteCore

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


class SQLiteSchedules:
    """The schedule statements on a SQLite store's connection and queries."""

    def __init__(self, store: SQLiteCore) -> None:
        self._store = store

    @contextmanager
    def tx(self) -> Iterator[Any]:
        with self._store._tx() as c:
            yield c

    @contextmanager
    def read(self) -> Iterator[Any]:
        yield self._store.conn

    def rows(self, c: Any, query: str, **params: Any) -> list[dict[str, Any]]:
        bound = {k: v.timestamp() if isinstance(v, datetime) else v for k, v in params.items()}
        bound["now"] = self._store._now()
        rows = [dict(r) for r in c.execute(self._store.q[query], bound).fetchall()]
        for r in rows:
            for k in TIME_COLUMNS.intersection(r):
                r[k] = _from_ts(r[k])
        return rows

    def one(self, c: Any, query: str, **params: Any) -> dict[str, Any] | None:
        rows = self.rows(c, query, **params)
        return rows[0] if rows else None

    def instant(self, value: datetime | None) -> Any:
        return None if value is None else _micros(value)

    def json(self, value: Any) -> str:
        return json.dumps(value, separators=(",", ":"), default=_micros)
