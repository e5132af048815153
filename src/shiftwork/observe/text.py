"""How values are written for people, one formatter per kind, shared by the command line,
``top`` and the dashboard: instants, ages, and tables that fit a narrow terminal."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime

from rich import box
from rich.table import Table


def format_time(value: datetime | None) -> str:
    """An instant in a column headed "(UTC)": ``2025-03-08 12:00:00``; ``-`` when none.

    The one way a table shows an instant (JSON and the schedule preview print ISO 8601
    instead, as input other tools and ``--after`` take back).
    """
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S") if value else "-"


def format_age(seconds: float | None) -> str:
    """``12.5s``, ``3.0m``, ``1.2h``, ``2.0d``; ``-`` when there is none."""
    if seconds is None:
        return "-"
    seconds = max(seconds, 0.0)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{seconds:.1f}s"


def format_seconds(seconds: float | None) -> str:
    """A run time: ``850ms``, ``12.5s``, ``3.0m``, ``1.2h``; ``-`` when there is none."""
    if seconds is None:
        return "-"
    if seconds < 1:
        return f"{max(seconds, 0.0) * 1000:.0f}ms"
    return format_age(seconds)


def make_table(columns: Iterable[str], title: str | None = None,
               right: Iterable[str] = (), whole: Iterable[str] = ()) -> Table:
    """A table with these column headings; the ``right`` ones (counts) right-aligned.

    Made to fit 80 columns: no vertical rules, and a long value wraps inside its cell
    (never ``myapp.e…``); the ``whole`` columns (ids, states, times) never wrap.
    """
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    right, whole = set(right), set(whole)
    for col in columns:
        table.add_column(col, justify="right" if col in right else "left",
                         overflow="fold", no_wrap=col in whole,
                         ratio=None if col in whole else 1)
    return table


def break_name(name: str, width: int) -> str:
    """A dotted or snake_case name (a task, a queue) in lines of at most ``width``, broken
    after a ``.``, ``_`` or ``-`` so that words stay whole (``dashapp.`` /
    ``charge_customer``); only a part longer than a line is cut inside."""
    width = max(width, 1)
    lines: list[str] = []
    line = ""
    for part in re.findall(r"[^._-]*[._-]|[^._-]+$", name) or [name]:
        if line and len(line) + len(part) > width:
            lines.append(line)
            line = ""
        while len(line) + len(part) > width:
            cut = width - len(line)
            lines.append(line + part[:cut])
            line, part = "", part[cut:]
        line += part
    lines.append(line)
    return "\n".join(lines)


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis saying it was cut."""
    return text if len(text) <= limit else text[:limit - 1] + "…"
