"""Job arguments: JSON only, checked when the job is sent rather than when it runs."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from .errors import PayloadError

#: Default limit on a job's serialized arguments, in bytes (documented in the README).
DEFAULT_MAX_PAYLOAD_BYTES = 256 * 1024

# One encoder for every job: json.dumps with options builds a new one per call.
_compact = json.JSONEncoder(separators=(",", ":")).encode


def _check_json(value: Any, where: str) -> None:
    """Reject anything that would not round-trip through JSON unchanged."""
    if value is None or isinstance(value, (bool, str)):
        return
    if isinstance(value, int):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise PayloadError(f"{where}: {value!r} is not valid JSON (NaN/Infinity)")
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_json(item, f"{where}[{i}]")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise PayloadError(f"{where}: dict key {key!r} is not a string")
            _check_json(item, f"{where}[{key!r}]")
        return
    raise PayloadError(
        f"{where}: {type(value).__name__} is not JSON-serializable "
        "(job arguments must be JSON: str, int, float, bool, None, list, dict)"
    )


def encode_args(
    task: str, args: tuple[Any, ...] | list[Any], kwargs: dict[str, Any], max_bytes: int,
    names: list[str] | None = None,
) -> str:
    """Validate and serialize a job's arguments; errors name the argument."""
    for i, value in enumerate(args):
        label = repr(names[i]) if names and i < len(names) else f"#{i}"
        _check_json(value, f"{task}: argument {label}")
    for key, value in kwargs.items():
        _check_json(value, f"{task}: argument {key!r}")
    # Spelled out rather than one dict encoded: bulk enqueue builds 100,000 of these, and
    # the empty parts then cost no encoder call (same text as encoding the dict).
    text = ('{"args":' + (_compact(list(args)) if args else "[]") + ',"kwargs":'
            + (_compact(kwargs) if kwargs else "{}") + "}")
    size = len(text)  # ensure_ascii: one byte per character
    if size > max_bytes:
        raise PayloadError(
            f"{task}: arguments are {size} bytes, over the {max_bytes}-byte limit; "
            "store large data elsewhere and pass a reference"
        )
    return text


def encode_json(value: Any, what: str) -> str:
    _check_json(value, what)
    return _compact(value)


def unique_digest(task: str, parts: dict[str, Any]) -> str:
    canonical = json.dumps(parts, sort_keys=True, separators=(",", ":"))
    return f"{task}:{hashlib.sha256(canonical.encode()).hexdigest()[:32]}"
