"""PostgreSQL's schedule statements (``store.schedules``): the transactions that use them
are the schedule component's (schedules/firing.py, schedules/reconcile.py)."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from psycopg.rows import dict_row

from shiftwork.store.postgres.core import PostgresCore
from shiftwork.store.rows import TIME_COLUMNS


class PostgresSchedules:
    """The schedule statements on a PostgreSQL store's connections and queries."""

    def __init__(self, store: PostgresCore) -> None:
        self._store = store

    @contextmanager
    def tx(self) -> Iterator[Any]:
        with self._store._conn() as c, c.transaction():
            yield c

    @contextmanager
    def read(self) -> Iterator[Any]:
        with self._store._conn() as c:
            yield c

    def rows(self, c: Any, query: str, **params: Any) -> list[dict[str, Any]]:
        cur = c.cursor(row_factory=dict_row)
        cur.execute(self._store.q[query], self._store._p(**params))
        if cur.description is None:
            return []
        rows = cur.fetchall()
        times = [col.name for col in cur.description if col.name in TIME_COLUMNS]
        for r in rows:
            for k in times:
                t = r[k]
                if t is not None:
                    r[k] = t.astimezone(UTC) if t.tzinfo else t.replace(tzinfo=UTC)
        return rows  # type: ignore[no-any-return]

    def one(self, c: Any, query: str, **params: Any) -> dict[str, Any] | None:
        rows = self.rows(c, query, **params)
        return rows[0] if rows else None

    def instant(self, value: datetime | None) -> Any:
        return None if value is None else _isoformat(value)

    def json(self, value: Any) -> str:
        # Instants as ISO 8601 with their offset: timestamptz reads them exactly.
        return json.dumps(value, separators=(",", ":"), default=_iso)


def _iso(value: Any) -> str:
    if isinstance(value, datetime):
        return _isoformat(value)
    raise TypeError(f"cannot encode {value!r} for a batch statement")


@functools.lru_cache(maxsize=1024)
def _isoformat(value: datetime) -> str:
    # A burst's rows share a few instants (fire instants, run_at): formatted once each.
    # (Equal instants in other zones hit the same entry: the text names the same instant.)
    return value.isoformat()
