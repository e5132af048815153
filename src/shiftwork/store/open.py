"""Open the right engine for a DSN."""

from __future__ import annotations

import os
import re
from urllib.parse import urlparse

from shiftwork.core.clock import Clock
from shiftwork.core.errors import ConfigurationError
from shiftwork.store.base import Store
from shiftwork.store.connections import Connections


def open_store(dsn: str, clock: Clock | None = None, schema: str = "shiftwork",
               pool_size: int = 10, connections: Connections | None = None,
               async_pool_size: int = 4) -> Store:
    """``sqlite:///relative.db``, ``sqlite:////abs/path.db``, ``postgresql://...`` or
    ``host=... dbname=...``. Leave the password out and psycopg reads ``PGPASSWORD`` or
    ``~/.pgpass``; any password a DSN does carry is redacted from every error.
    ``connections`` (PostgreSQL only) bounds the pool and says whether PgBouncer is in
    front; without it the pool is ``pool_size`` at most."""
    if not isinstance(dsn, str):
        raise ConfigurationError(f"bad database DSN: expected a string, got {type(dsn).__name__}")
    if "://" not in dsn and "=" in dsn:
        scheme = "postgresql"  # libpq's key=value form: host=... dbname=...
    elif "://" not in dsn:
        raise ConfigurationError(
            f"bad database DSN {dsn!r}: expected sqlite:///path/jobs.db or postgresql://... "
            "(or PostgreSQL's key=value form: host=... dbname=...)"
        )
    else:
        scheme = urlparse(dsn).scheme.lower()
    if scheme == "sqlite":
        from shiftwork.store.sqlite.store import SQLiteStore

        path = dsn.split("://", 1)[1]
        path = path[1:] if path.startswith("/") else path  # sqlite:///x.db -> x.db
        # Resolved once, here: a later chdir does not move the database.
        return SQLiteStore(os.path.abspath(path) if path else path, clock=clock)
    if scheme in ("postgresql", "postgres"):
        _refuse_unencoded_at(dsn)
        _require_postgres_extra()
        from shiftwork.store.postgres.store import PostgresStore

        return PostgresStore(dsn, schema=schema, clock=clock,
                             connections=connections or Connections(pool_size=pool_size),
                             async_pool_size=async_pool_size)
    raise ConfigurationError(
        f"unsupported database scheme {scheme!r} in DSN: use sqlite:/// or postgresql://"
    )


def _refuse_unencoded_at(dsn: str) -> None:
    """A URL whose user or password holds an unencoded "@": libpq splits it at the first
    "@" and would look the password's tail up as a host name (in DNS, and in its error
    messages). Refused before any connection, the password masked."""
    from shiftwork.core.redact import redact

    if "://" not in dsn:
        return  # libpq's key=value form: no authority
    authority = re.split(r"[/?#]", dsn.split("://", 1)[1], maxsplit=1)[0]
    if authority.count("@") > 1:
        raise ConfigurationError(redact(
            f"bad database DSN {dsn}: the user or password holds an unencoded '@' "
            "(write it as %40, or give the password in PGPASSWORD or ~/.pgpass)"))


def _require_postgres_extra() -> None:
    """PostgreSQL's driver is an extra (SQLite users need none): say which one is missing."""
    import importlib.util

    missing = [m for m in ("psycopg", "psycopg_pool") if importlib.util.find_spec(m) is None]
    if missing:
        raise ConfigurationError(
            f"a postgresql:// DSN needs {' and '.join(missing)}, which are not installed: "
            "pip install 'shiftwork[postgres]'"
        )
