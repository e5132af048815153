"""What shiftwork stores for you: JSON only, bounded, checked before it is written.

Every blob a job writes (arguments, meta, checkpoint, progress, result, workflow step
result, event payload, effect result) goes through :func:`encode_json` or
:func:`encode_args` with a :class:`Limit` taken from the app's ``Settings``. A value
that breaks a limit raises :class:`~shiftwork.core.errors.PayloadTooLargeError` (a
``PayloadError``) naming the field, its size and the setting that raises the limit.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any

from shiftwork.core.errors import PayloadError, PayloadTooLargeError

#: Default limit on a job's serialized arguments, in bytes (``Settings.max_args_bytes``).
DEFAULT_MAX_PAYLOAD_BYTES = 256 * 1024
#: Integers longer than this many bits (about 4,200 digits) are refused: Python will not
#: read back a JSON integer over 4,300 digits, so storing one would poison the job.
MAX_INT_BITS = 14_000

# One encoder for every job: json.dumps with options builds a new one per call.
_compact = json.JSONEncoder(separators=(",", ":")).encode


@dataclass(frozen=True)
class Limit:
    """A size limit for one kind of stored blob, and the setting that changes it."""

    setting: str  # the Settings field, named in errors so the reader knows what to raise
    max_bytes: int
    max_depth: int


def _check_str(value: str, where: str) -> None:
    # PostgreSQL text and jsonb cannot hold NUL or an unpaired surrogate: refuse them
    # here, on both engines, rather than with a driver error at the write.
    if "\x00" in value:
        raise PayloadError(f"{where}: strings may not contain NUL (\\x00) characters")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise PayloadError(f"{where}: string holds an unpaired surrogate "
                               "(not valid Unicode)") from None


def _plain(value: Any) -> bool:
    """A scalar that passes :func:`_check_json` as it is: None, a bool, a small int, an
    ASCII string without NUL. Most arguments are; they skip the general check."""
    t = type(value)
    if t is str:
        return value.isascii() and "\x00" not in value
    if t is int:
        return value.bit_length() <= MAX_INT_BITS  # type: ignore[no-any-return]
    return value is None or t is bool


def _check_json(value: Any, where: str, depth: int, max_depth: int) -> None:
    """Reject anything that would not round-trip through JSON unchanged and stay bounded."""
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, str):
        _check_str(value, where)
        return
    if isinstance(value, int):
        if value.bit_length() > MAX_INT_BITS:
            raise PayloadTooLargeError(
                f"{where}: integer of {value.bit_length()} bits is too large "
                f"(at most {MAX_INT_BITS} bits, about 4,200 digits); store it as a string")
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise PayloadError(f"{where}: {value!r} is not valid JSON (NaN/Infinity)")
        return
    if isinstance(value, (list, tuple, dict)) and depth >= max_depth:
        raise PayloadTooLargeError(
            f"{where}: nested more than {max_depth} levels deep (Settings.max_json_depth)")
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_json(item, f"{where}[{i}]", depth + 1, max_depth)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise PayloadError(f"{where}: dict key {key!r} is not a string")
            _check_str(key, f"{where}: dict key")
            _check_json(item, f"{where}[{key!r}]", depth + 1, max_depth)
        return
    raise PayloadError(
        f"{where}: {type(value).__name__} is not JSON-serializable "
        "(job arguments must be JSON: str, int, float, bool, None, list, dict)"
    )


def _check_size(text: str, what: str, limit: Limit, hint: str) -> None:
    size = len(text)  # ensure_ascii: one byte per character
    if size > limit.max_bytes:
        raise PayloadTooLargeError(
            f"{what}: {size} bytes, over the {limit.max_bytes}-byte limit "
            f"(Settings.{limit.setting}); {hint}")


def encode_args(
    task: str, args: tuple[Any, ...] | list[Any], kwargs: dict[str, Any], limit: Limit,
    names: list[str] | None = None,
) -> str:
    """Validate and serialize a job's arguments; errors name the argument."""
    for i, value in enumerate(args):
        if not _plain(value):  # (the argument's name is only spelled out for the check)
            label = repr(names[i]) if names and i < len(names) else f"#{i}"
            _check_json(value, f"{task}: argument {label}", 1, limit.max_depth)
    for key, value in kwargs.items():
        if not (_plain(key) and _plain(value)):
            _check_str(key, f"{task}: argument name")
            _check_json(value, f"{task}: argument {key!r}", 1, limit.max_depth)
    # Spelled out rather than one dict encoded: bulk enqueue builds 100,000 of these, and
    # the empty parts then cost no encoder call (same text as encoding the dict).
    text = ('{"args":' + (_compact(list(args)) if args else "[]") + ',"kwargs":'
            + (_compact(kwargs) if kwargs else "{}") + "}")
    _check_size(text, f"{task}: arguments", limit,
                "store large data elsewhere and pass a reference")
    return text


def parse_json(text: str, what: str, max_depth: int) -> Any:
    """JSON text people typed (a command's ``--args``, the dashboard's form), read and
    checked as a stored value would be; PayloadError naming ``what`` otherwise. Nesting
    too deep for the parser (a RecursionError) gets the same message as nesting too deep
    to store."""
    too_deep = PayloadTooLargeError(
        f"{what}: nested more than {max_depth} levels deep (Settings.max_json_depth)")
    try:
        value = json.loads(text)
    except RecursionError:
        raise too_deep from None
    except ValueError as exc:
        raise PayloadError(f"{what} must be JSON: {exc}") from None
    try:
        _check_json(value, what, 0, max_depth)
    except RecursionError:  # deep enough to pass the parser, not this walk
        raise too_deep from None
    return value


def encode_json(value: Any, what: str, limit: Limit) -> str:
    """``value`` as compact JSON for a column, within ``limit``; PayloadError otherwise."""
    _check_json(value, what, 0, limit.max_depth)
    text = _compact(value)
    _check_size(text, what, limit, "store large data elsewhere and keep a reference")
    return text


def check_text(value: str, what: str, limit: Limit) -> str:
    """A plain string stored as is (a unique key): valid text within ``limit`` bytes."""
    _check_str(value, what)
    size = len(value.encode("utf-8"))
    if size > limit.max_bytes:
        raise PayloadTooLargeError(
            f"{what}: {size} bytes, over the {limit.max_bytes}-byte limit "
            f"(Settings.{limit.setting}); use a shorter key or a digest of it")
    return value


#: Longest workflow step name, event name and event key (characters). A step's name is
#: part of the history's key and of its members' event names (``<step>/<i>``); a wait's
#: default step is ``event:<name>``, so a step name may be a little longer.
MAX_STEP_NAME = 300
MAX_EVENT_NAME = 256
MAX_EVENT_KEY = 256


def check_label(value: object, what: str, max_chars: int) -> str:
    """A name we store and index (a step name, an event name or key): a non-empty string
    of valid text, without NUL, of at most ``max_chars`` characters."""
    if not isinstance(value, str) or not value:
        raise PayloadError(f"{what} must be a non-empty string, not {_short(value)}")
    if len(value) > max_chars:
        raise PayloadError(f"{what} is {len(value)} characters long, over the limit of "
                           f"{max_chars} (starts {_short(value)})")
    _check_str(value, f"{what} {_short(value)}")
    return value


def _short(value: object) -> str:
    """A value in an error message, cut so that the message stays short."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def storable_text(value: str, max_chars: int) -> str:
    """Text we write on the task's behalf (an error message): NUL and unpaired surrogates
    escaped, cut to ``max_chars`` characters, so that writing it cannot fail."""
    value = value[:max_chars]
    if "\x00" in value:
        value = value.replace("\x00", "\\x00")
    if not value.isascii():
        value = value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


def unique_digest(task: str, parts: dict[str, Any]) -> str:
    canonical = json.dumps(parts, sort_keys=True, separators=(",", ":"))
    return f"{task}:{hashlib.sha256(canonical.encode()).hexdigest()[:32]}"
