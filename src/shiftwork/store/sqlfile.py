"""Load named queries from a ``.sql`` file: ``-- name: jobs_claim`` starts each one."""

from __future__ import annotations

import re
from importlib import resources

_NAME = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.M)
#: A migration's line that stands for a whole schema file beside it (``functions.sql``):
#: the file is kept in one place, and each migration naming it applies its current text.
_APPLY = re.compile(r"^--\s*apply:\s*([a-z_][a-z0-9_]*\.sql)\s*$", re.M)


def substitute(text: str, **substitutions: str) -> str:
    """``text`` with each ``{key}`` replaced by its value (schema names, ``{now}``...)."""
    for key, value in substitutions.items():
        text = text.replace("{" + key + "}", value)
    return text


def load_file(package: str, filename: str, **substitutions: str) -> str:
    """A schema file of ``package`` (``functions.sql``), substituted."""
    return substitute(resources.files(package).joinpath(filename).read_text(),
                      **substitutions)


def load_queries(package: str, filename: str, **substitutions: str) -> dict[str, str]:
    parts = _NAME.split(load_file(package, filename, **substitutions))
    queries: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in queries:
            raise ValueError(f"{filename}: query {name} defined twice")
        queries[name] = body.strip().rstrip(";")
    return queries


def load_all_queries(package: str, **substitutions: str) -> dict[str, str]:
    """Every ``*.sql`` file beside an engine's module, one namespace of named queries.

    Features keep their SQL in their own file (``jobs.sql``, ``schedules.sql``...).
    """
    queries: dict[str, str] = {}
    for entry in sorted(resources.files(package).iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".sql"):
            for name, text in load_queries(package, entry.name, **substitutions).items():
                if name in queries:
                    raise ValueError(f"{package}: query {name} defined in two files")
                queries[name] = text
    return queries


def load_migrations(package: str, **substitutions: str) -> list[tuple[int, str, str]]:
    """Numbered migration files ``0001_name.sql`` in ``package``, in order; a line
    ``-- apply: functions.sql`` in one is replaced by that file of ``package``."""
    found = []
    files = resources.files(package)
    for entry in files.iterdir():
        match = re.match(r"^(\d{4})_([a-z0-9_]+)\.sql$", entry.name)
        if match:
            text = substitute(_APPLY.sub(lambda m: files.joinpath(m.group(1)).read_text(),
                                         entry.read_text()), **substitutions)
            found.append((int(match.group(1)), match.group(2), text))
    return sorted(found)
