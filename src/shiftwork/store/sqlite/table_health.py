"""SQLite: the database file's health, what of it SQLite can tell cheaply (the pages on
the freelist against the file's, the -wal file's size); the rest said not measured."""

from __future__ import annotations

import os
import sqlite3

from shiftwork.model.table_health import TableHealth

#: What Postgres reports and SQLite has no counterpart for, with why.
NOT_ON_SQLITE = {
    "dead tuples": "not on SQLite: a delete frees its pages at once, onto the freelist",
    "vacuum": "not on SQLite: there is no autovacuum; free pages are reused by later "
              "writes (VACUUM rewrites the file to return them to the system)",
    "xmin horizon": "not on SQLite: a long reader holds back WAL checkpoints instead, "
                    "which shows as a growing -wal file",
    "index bloat": "not on SQLite: freed index pages go to the same freelist",
    "checkpoint lag": "not measurable without running a checkpoint: the -wal file's size "
                      "stands for it (it shrinks only when a checkpoint restarts it)",
}


def read_table_health(conn: sqlite3.Connection, q: dict[str, str], path: str) -> TableHealth:
    row = conn.execute(q["table_health_pages"]).fetchone()
    pages, free, page_size = int(row[0]), int(row[1]), int(row[2])
    try:
        wal = os.stat(path + "-wal").st_size
    except FileNotFoundError:
        wal = 0  # no writer has opened the file since the last clean close
    return TableHealth(engine="sqlite", size_bytes=pages * page_size, page_count=pages,
                       free_pages=free, page_size=page_size, wal_bytes=wal,
                       not_measured=dict(NOT_ON_SQLITE))
