"""Where the user's code called shiftwork: for errors about a declaration, whose traceback
ends inside the library, the message names the user's file and line instead."""

from __future__ import annotations

import os
import sys

from shiftwork.core.errors import ShiftworkError

#: The shiftwork package (this module is in its core/): frames under it are the library's.
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def user_line() -> str | None:
    """``/path/myapp.py, line 12``: the innermost frame outside the package, if any."""
    frame = sys._getframe(1)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not path.startswith(_PACKAGE):
            return f"{frame.f_code.co_filename}, line {frame.f_lineno}"
        frame = frame.f_back  # type: ignore[assignment]
    return None


def declared_at(exc: ShiftworkError) -> ShiftworkError:
    """``exc`` again, its message ending with where the user declared the thing (once:
    an error already placed is returned as it is)."""
    if getattr(exc, "placed", False):
        return exc
    where = user_line()
    if where is None:
        return exc
    message = f"{exc} (declared at {where})"
    try:
        placed = type(exc)(message)
    except TypeError:  # a subclass with arguments of its own
        placed = ShiftworkError(message)
    placed.placed = True  # type: ignore[attr-defined]
    return placed


def user_traceback(exc: BaseException, limit: int = 3) -> str:
    """The last ``limit`` frames of ``exc``'s traceback that are the user's (outside the
    package; all of them if none is), and its message: what an import failure shows."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    mine = [f for f in frames if not f.filename.startswith("<frozen")
            and f"{os.sep}importlib{os.sep}" not in f.filename
            and not os.path.abspath(f.filename).startswith(_PACKAGE)]
    shown = traceback.StackSummary.from_list((mine or list(frames))[-limit:])
    return ("Traceback (most recent call last):\n" + "".join(shown.format())
            + "".join(traceback.format_exception_only(type(exc), exc)))
