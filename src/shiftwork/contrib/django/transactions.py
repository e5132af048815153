"""Enqueue inside ``transaction.atomic()``: on Django's own connection, so the job commits
or rolls back with the block (PostgreSQL through psycopg 3, or SQLite)."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from shiftwork.core.errors import ConfigurationError

if TYPE_CHECKING:
    from shiftwork.app import App


def install(app: App, alias: str) -> None:
    """Make ``app``'s enqueues join the atomic block open on ``alias``'s connection."""
    from django.db import connections, transaction

    def ambient() -> Any:
        connection = connections[alias]
        if not connection.in_atomic_block:
            return None  # autocommit: the App's own connection commits the job at once
        connection.ensure_connection()
        raw = connection.connection
        if isinstance(raw, sqlite3.Connection) or _is_psycopg(raw):
            return raw
        raise ConfigurationError(
            f"Django's connection {alias!r} is a {type(raw).__module__}.{type(raw).__name__}: "
            "shiftwork joins psycopg 3 or sqlite3 transactions (pip install 'psycopg[binary]'; "
            "Django uses psycopg 3 when it is installed)")

    def on_commit(fn: Any) -> None:
        transaction.on_commit(fn, using=alias)

    app.runtime.ambient_transaction = ambient
    app.runtime.on_commit = on_commit


def _is_psycopg(raw: Any) -> bool:
    try:
        import psycopg
    except ImportError:
        return False
    return isinstance(raw, psycopg.Connection)
