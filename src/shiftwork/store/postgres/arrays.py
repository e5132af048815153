"""Array parameters for the hot statements, made cheap to send.

psycopg dumps a Python list element by element in Python: a completion's six arrays of
50 took ~100 us to dump, about 2 us a job. A list of ints (or of plain words) written as
one array literal is a single ``str`` to send, which the statement casts
(``%(ids)s::bigint[]``); an array of nothing but NULLs is sent as NULL, which ``unnest``
pads to the other arrays' length.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def int_array(values: Iterable[int]) -> str:
    """``[1, 2]`` as ``'{1,2}'``."""
    return "{" + ",".join([str(int(v)) for v in values]) + "}"


def word_array(values: Iterable[str]) -> str:
    """Plain words (states: letters and underscores only) as an array literal."""
    words = list(values)
    for w in words:
        if not w.replace("_", "").isalpha():
            raise ValueError(f"not a plain word for an array literal: {w!r}")
    return "{" + ",".join(words) + "}"


def text_array(values: Iterable[str]) -> str:
    """Any strings (task names: dots, spaces...) as an array literal, each one quoted."""
    return "{" + ",".join(['"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
                           for v in values]) + "}"


def float_array(values: Iterable[float]) -> str:
    """Finite floats as an array literal (repr: exact, read back as the same float8)."""
    return "{" + ",".join([repr(float(v)) for v in values]) + "}"


def or_null(values: list[Any]) -> list[Any] | None:
    """``values``, or None when every one is None (sent as one NULL, padded by unnest)."""
    for v in values:
        if v is not None:
            return values
    return None
