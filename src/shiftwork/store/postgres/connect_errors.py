"""Which connection failures are worth retrying: an outage is, a refusal is not.

libpq reports a failed connection as text only (psycopg's ``sqlstate`` is ``None`` for
them), so the server's refusals are recognised by the messages PostgreSQL sends with
SQLSTATE 3D000 (invalid_catalog_name) and 28P01 / 28000 (invalid_password,
invalid_authorization_specification). A server with ``lc_messages`` in another language
is not recognised: its refusals are retried like an outage, as before.
"""

from __future__ import annotations

import re

from shiftwork.core.errors import (
    CommitUnknownError,
    ConfigurationError,
    DatabaseAuthError,
    DatabaseMissingError,
    StorageError,
)

_MISSING = re.compile(r'database "[^"]*" does not exist')
_AUTH = re.compile(r"password authentication failed|role \"[^\"]*\" does not exist|"
                   r"no pg_hba\.conf entry|(ident|peer|ldap|gss|sspi|radius|cert) "
                   r"authentication failed|password authentication|"
                   r"fe_sendauth: no password supplied", re.IGNORECASE)


def libpq_text(error: object) -> str:
    """libpq's message as a line or two for people: it indents its hint with a tab
    ("\\tIs the server running on that host ...?"), which the command line would show as
    a literal ``\\t``."""
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    return "\n  ".join(lines)


def refusal(message: str, where: str) -> ConfigurationError | None:
    """The error to raise at once for a connection the server refused, else ``None``."""
    reason = _server_reason(message)
    if _MISSING.search(message):
        return DatabaseMissingError(f"PostgreSQL at {where}: {reason} (SQLSTATE 3D000); "
                                    "create it (createdb) or fix the DSN")
    if _AUTH.search(message):
        return DatabaseAuthError(f"PostgreSQL at {where} refused the login: {reason} "
                                 "(SQLSTATE 28P01/28000); check the user, the password "
                                 "(PGPASSWORD, ~/.pgpass) and pg_hba.conf")
    return None


def lost_reply(where: str, exc: Exception) -> CommitUnknownError:
    """The error for a connection that broke after a statement was sent: it may have
    committed, and nobody can tell (the sync and the async pool raise the same)."""
    return CommitUnknownError(f"PostgreSQL at {where}: the connection was lost before the "
                              f"reply arrived, so whether the call committed is unknown "
                              f"({exc})".rstrip())


def read_only(where: str, exc: Exception) -> StorageError:
    """The error for a write refused because the connection reached a read-only server:
    a standby, found first in a multi-host DSN that does not ask for the primary (the
    caller closes that connection, so the pool does not keep it)."""
    return StorageError(f"PostgreSQL at {where} is read-only ({exc}): a standby? List the "
                        "servers with target_session_attrs=read-write so that connections "
                        "go to the primary (docs/deploy.md, \"High availability\")")


def _server_reason(message: str) -> str:
    """The server's own words: the part after ``FATAL:`` when there is one."""
    match = re.search(r"FATAL:\s+(.*)", message)
    return (match.group(1) if match else message).strip()
