"""Validation of names that reach SQL, logs and the dashboard (queues, tasks, schemas)."""

from __future__ import annotations

import re

from .errors import ConfigurationError

_QUEUE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,62}$")
_SCHEMA = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_TASK = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:<>\-]{0,199}$")


def check_queue(name: object) -> str:
    if not isinstance(name, str) or not _QUEUE.match(name):
        raise ConfigurationError(
            f"bad queue name {name!r}: use 1-63 characters, letters, digits, '_', '-' or '.', "
            "starting with a letter or digit"
        )
    return name


def check_schema(name: object) -> str:
    if not isinstance(name, str) or not _SCHEMA.match(name):
        raise ConfigurationError(
            f"bad schema name {name!r}: use lowercase letters, digits and '_' (max 63), "
            "starting with a letter or '_'"
        )
    return name


def check_task_name(name: object) -> str:
    if not isinstance(name, str) or not _TASK.match(name):
        raise ConfigurationError(f"bad task name {name!r}: use letters, digits, '_', '.', ':'")
    return name


def did_you_mean(name: str, known: list[str]) -> str:
    """``"; did you mean X?"`` for the closest known names, or ``""``.

    A bare function name finds its declared ``module.function`` (the default name of a
    task or a periodic schedule), which a plain edit distance misses for long modules.
    """
    import difflib

    close = [k for k in known if k.rsplit(".", 1)[-1] == name]
    close += [k for k in difflib.get_close_matches(name, known, n=3, cutoff=0.6)
              if k not in close]
    return f"; did you mean {' or '.join(close[:3])}?" if close else ""
