"""The test apps' own connection to the test database, one per thread, for recording
what their tasks did (outside shiftwork's tables and transactions)."""

from __future__ import annotations

import sqlite3
import threading
from typing import Any

import psycopg


class SideConnection:
    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self._local = threading.local()

    @property
    def mark(self) -> str:
        """The driver's placeholder."""
        return "?" if self.dsn.startswith("sqlite") else "%s"

    def get(self) -> Any:
        conn = getattr(self._local, "conn", None)
        if conn is not None and getattr(conn, "closed", False):
            conn = None  # the server restarted (tests/test_pg_restart.py): connect again
        if conn is None:
            if self.dsn.startswith("sqlite"):
                conn = sqlite3.connect(self.dsn.split(":///", 1)[1], timeout=30,
                                       isolation_level=None)
            else:
                conn = psycopg.connect(self.dsn, autocommit=True)
            self._local.conn = conn
        return conn

    def forget(self) -> None:
        """Drop this thread's connection (the next call connects again)."""
        self._local.conn = None
