"""Validation of names that reach SQL, logs and the dashboard (queues, tasks, schemas,
schedules), and the id by which a schedule is named in a URL or a command."""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata

from shiftwork.core.errors import ConfigurationError

_QUEUE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,62}")
_SCHEMA = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_TASK = re.compile(r"[A-Za-z_][A-Za-z0-9_.:<>\-]{0,199}")


def check_queue(name: object) -> str:
    if not isinstance(name, str) or not _QUEUE.fullmatch(name):
        raise ConfigurationError(
            f"bad queue name {name!r}: use 1-63 characters, letters, digits, '_', '-' or '.', "
            "starting with a letter or digit"
        )
    return name


def check_schema(name: object) -> str:
    if not isinstance(name, str) or not _SCHEMA.fullmatch(name):
        raise ConfigurationError(
            f"bad schema name {name!r}: use lowercase letters, digits and '_' (max 63), "
            "starting with a letter or '_'"
        )
    return name


def check_task_name(name: object) -> str:
    if not isinstance(name, str) or not _TASK.fullmatch(name):
        raise ConfigurationError(f"bad task name {name!r}: use letters, digits, '_', '.', ':'")
    return name


#: A schedule's name: at most this many characters.
SCHEDULE_NAME_MAX = 200
#: What starts a schedule id (``~`` and the name in URL-safe base64), never a name.
SCHEDULE_ID_PREFIX = "~"


def _schedule_name_problem(name: object) -> str | None:
    if not isinstance(name, str) or not name or len(name) > SCHEDULE_NAME_MAX:
        return f"use 1-{SCHEDULE_NAME_MAX} characters"
    for char in name:
        # Control (C0, C1), format (bidi overrides, zero-width), surrogate, private-use and
        # unassigned characters, and every kind of space: nothing a person can read or type.
        if char in "/\\" or char.isspace() or unicodedata.category(char)[0] in "CZ":
            what = repr(char) if char in "/\\" else f"U+{ord(char):04X}"
            return (f"{what} is not allowed (no '/', '\\', spaces, control or bidi "
                    "characters: the name is part of the dashboard's URLs)")
    if not name.strip("."):
        return "a name of dots only would be read as a path step ('..')"
    if name.startswith(SCHEDULE_ID_PREFIX):
        return f"{SCHEDULE_ID_PREFIX!r} at the start is kept for schedule ids"
    return None


def check_schedule_name(name: object) -> str:
    """A schedule's name, as declared in code or added at run time, or a
    ``ConfigurationError`` naming what is wrong with it.

    1-200 printable characters other than ``/``, ``\\`` and spaces, not dots only, not
    starting with ``~`` (ids do): a name is one segment of the dashboard's URLs, and is
    printed on terminals and in logs.
    """
    problem = _schedule_name_problem(name)
    if problem is not None:
        shown = repr(name[:60]) + f"... ({len(name)} characters)" \
            if isinstance(name, str) and len(name) > 80 else repr(name)
        raise ConfigurationError(f"bad schedule name {shown}: {problem}")
    assert isinstance(name, str)
    return name


def schedule_id(name: str) -> str:
    """The id of the schedule ``name``: ``~`` and the name in URL-safe base64. Any stored
    name has one, also a name stored before names were checked (``x/../y``, control
    characters), so every schedule can be acted on by the dashboard and the command line."""
    raw = base64.urlsafe_b64encode(name.encode("utf-8", "surrogatepass"))
    return SCHEDULE_ID_PREFIX + raw.rstrip(b"=").decode("ascii")


def schedule_ref(name: str) -> str:
    """How the dashboard names a schedule in its URLs: by its name when the name is a
    valid one, else by its :func:`schedule_id`."""
    return name if _schedule_name_problem(name) is None else schedule_id(name)


def schedule_name(ref: str) -> str:
    """The schedule a name or an id (``~...``) refers to."""
    if not ref.startswith(SCHEDULE_ID_PREFIX):
        return ref
    encoded = ref[len(SCHEDULE_ID_PREFIX):]
    try:
        raw = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
        if not raw or base64.urlsafe_b64encode(raw).rstrip(b"=").decode() != encoded:
            raise ValueError("not canonical")
        return raw.decode("utf-8", "surrogatepass")
    except (ValueError, binascii.Error):
        raise ConfigurationError(f"bad schedule id {ref!r}: an id is '~' and the name in "
                                 "URL-safe base64 (shiftwork schedules --json shows it)"
                                 ) from None


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
