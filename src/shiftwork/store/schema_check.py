"""Is the database ready for this code? Asked once per App, before its first use.

Reading never creates anything: a missing SQLite file or schema is reported with the
command that creates it (``shiftwork migrate``), not made on the spot.
"""

from __future__ import annotations

import os

from shiftwork.core.errors import DatabaseMissingError, NotMigratedError
from shiftwork.core.redact import describe_dsn
from shiftwork.store import Store


def describe_database(store: Store, schema: str) -> str:
    """Which database this is, for headers and errors: ``sqlite /abs/jobs.db`` or
    ``postgresql host:5432/db schema jobs`` (never a password)."""
    if store.engine == "sqlite":
        return f"sqlite {getattr(store, 'path', '?')}"
    return f"postgresql {describe_dsn(getattr(store, 'dsn', ''))} schema {schema}"


def require_migrated(store: Store, schema: str) -> None:
    """Raise unless the schema is at this code's newest migration."""
    if store.engine == "sqlite":
        path = str(getattr(store, "path", ""))
        command = f"shiftwork migrate --dsn sqlite:///{path}"
        if not os.path.exists(path):
            missing = DatabaseMissingError(
                f"SQLite file {path} does not exist: run `shiftwork migrate` to create it "
                "(a relative sqlite:/// path is relative to the current folder)")
            missing.migrate_command = command
            raise missing
        what = f"SQLite file {path}"
    else:
        what = f"schema {schema}"
        command = f"shiftwork migrate --dsn DSN --schema {schema}"
    have, need = store.schema_version(), store.schema_latest()
    error = None
    if have == 0:
        error = NotMigratedError(f"{what} is not migrated: run shiftwork migrate")
    elif have < need:
        error = NotMigratedError(f"{what} is at migration {have} and this shiftwork needs "
                                 f"{need}: run shiftwork migrate")
    if error is not None:
        error.migrate_command = command
        raise error
