"""Text from jobs (arguments, error messages, names) made safe to print or log.

A control character in a job's error message or a schedule's name must not start a fake
log line, drive the terminal (``\\x1b[2J``) or reorder what is shown after it (a bidi
override, ``\\u202e``); :func:`escape_controls` writes every such character as a
visible escape (``\\n``, ``\\x1b``, ``\\u202e``). Every terminal output of user
strings goes through it: the plain console below, the text log formatter, and the
commands that print with ``click.echo``. The command line also prints user
data as plain text, never as Rich markup.
"""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console
from rich.text import Text

# C0 controls, DEL and C1 controls (U+0080-U+009F: some terminals act on them too);
# bidi marks, embeddings, overrides and isolates, which reorder what follows them
# (``evil\u202etxt.exe``), the zero-width characters, and the line and paragraph
# separators some terminals and viewers break lines at.
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e"
                       "\u2060-\u2064\u2066-\u2069\ufeff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def escape_controls(text: str, keep: str = "") -> str:
    """``text`` with each control character (except those in ``keep``) escaped."""
    if keep:
        return "".join(escape_controls(part) if part not in keep else part
                       for part in re.split(f"([{re.escape(keep)}])", text))
    return _CONTROLS.sub(_escape, text)


def plain_console(stderr: bool = False) -> Console:
    """A Rich console for user data: no markup, no highlighting, controls escaped."""
    return _PlainConsole(stderr=stderr, markup=False, highlight=False)


class _PlainConsole(Console):
    # Every str the console renders (print arguments, table cells) passes through here.
    def render_str(self, text: str, **kwargs: Any) -> Text:
        kwargs["markup"] = False
        return super().render_str(escape_controls(text, keep="\n"), **kwargs)
