"""PostgreSQL's step of the resolve cascade (store/deps.py): one statement takes the
finished parents' edges and counts their dependents down (``deps_resolve``)."""

from __future__ import annotations

from typing import Any

import psycopg

from shiftwork.store.deps import Cascade, Row


class PostgresCascade(Cascade):
    """The cascade on a PostgreSQL connection; group counting and settling are the
    shared statements (``groups_count``, ``groups_settle``)."""

    def _resolve_step(self, c: psycopg.Connection[Any], parent_ids: list[int],
                      finished: bool = False) -> list[Row]:
        return [r for r in self._rows(c, "deps_resolve", ids=parent_ids, finished=finished)
                if r[0] is not None]
