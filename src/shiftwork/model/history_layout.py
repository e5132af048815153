"""Partitioned history's values (PostgreSQL, store/postgres/partitions.py), apart from the
driver so that the command line names them without importing the driver's psycopg."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

#: A range's width, by its name on the command line.
INTERVALS = {"day": 86400, "hour": 3600}


@dataclass(frozen=True)
class HistoryRange:
    """One range of finish times and its leaves (``done``, ``dead``: None once dropped)."""

    name: str
    start: datetime
    end: datetime
    done_bytes: int | None
    dead_bytes: int | None


@dataclass
class Upkeep:
    """What one ``store.partitions.maintain`` did."""

    created: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    moved: int = 0  # jobs moved out of the catch-all into a new range
    forgotten: int = 0  # rows of other tables deleted with the dropped leaves' jobs
