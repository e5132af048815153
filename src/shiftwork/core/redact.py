"""Keep database passwords out of every message: errors, logs and command output.

The one helper for it. A DSN may be a URL (``postgresql://user:secret@host/db``,
``?password=secret``) or libpq's key=value form (``host=db password='se cret'``);
:func:`redact` masks the password in either shape wherever it appears in a text.
"""

from __future__ import annotations

import re

MASK = "***"

# user:password@ in a URL's authority, up to the authority's last "@": a password may
# hold an unencoded "@" (``app:Sup3r@S3cretTail@host``), which libpq reads as part of it.
_URL_PASSWORD = re.compile(r"(://[^:/?#@\s]*:)[^\s/?#]*(@)")
# ... and a password holding an unencoded "/", "?" or "#", up to its first "@".
_URL_PASSWORD_SLASH = re.compile(r"(://[^:/?#@\s]*:)[^\s@]*(@)")
# password=..., sslpassword=... as a key=value pair or a URL query parameter; the value
# may be single-quoted with backslash escapes (libpq's quoting).
_KV_PASSWORD = re.compile(r"(\b\w*password\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s&]*)",
                          re.IGNORECASE)

_QUOTED = re.compile(r'"[^"]*"')


def redact(text: str, fragments: bool = False) -> str:
    """``text`` with every DSN password in it replaced by ``***``.

    ``fragments``: also mask every double-quoted fragment, for a driver's complaint
    about a DSN it could not parse (``missing "=" after "hunter2"``), which quotes
    whatever piece it choked on, a password included.
    """
    if fragments:
        text = _QUOTED.sub(f'"{MASK}"', text)
    if "password" not in text.lower() and "@" not in text:
        return text  # the common case, without running the patterns
    text = _URL_PASSWORD.sub(rf"\g<1>{MASK}\g<2>", text)
    text = _URL_PASSWORD_SLASH.sub(rf"\g<1>{MASK}\g<2>", text)
    return _KV_PASSWORD.sub(rf"\g<1>{MASK}", text)


def describe_dsn(dsn: str) -> str:
    """Host, port and database of a PostgreSQL DSN (either shape), for error messages.

    A multi-host DSN (``host=a,b port=5432,5433``, or ``postgresql://a:5432,b:5433/db``,
    for a failover) names each server with its own port: ``a:5432,b:5433/db``.
    """
    import psycopg

    try:
        info = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "<unparseable DSN>"
    hosts = str(info.get("host") or info.get("hostaddr") or "localhost").split(",")
    ports = str(info.get("port") or "").split(",")
    if len(ports) == 1:  # libpq: one port for every host
        ports *= len(hosts)
    servers = ",".join(
        f"{f'[{host}]' if ':' in host else host or 'localhost'}:{port or 5432}"
        for host, port in zip(hosts, ports, strict=False))
    return f"{servers}/{info.get('dbname', '')}"
