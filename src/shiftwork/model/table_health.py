"""The job table's own health, as the engine's statistics tell it: what crosses the
storage seam from ``Store.table_health()`` (read from catalog and statistics views
only, never from the table itself) to health, the metrics and the dashboard."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class IndexHealth:
    """One index of the jobs table, with a catalog-based estimate of its wasted space:
    the size its rows would take packed (row count, key widths from ``pg_stats``,
    page overhead) against the pages it holds. None when the table was never analysed."""

    name: str
    size_bytes: int
    bloat_bytes: int | None = None

    @property
    def bloat_ratio(self) -> float | None:
        if self.bloat_bytes is None or self.size_bytes <= 0:
            return None
        return self.bloat_bytes / self.size_bytes


@dataclass(frozen=True)
class VacuumHolder:
    """Something that holds the xmin horizon back, so vacuum cannot remove the dead rows
    newer than it: an open transaction (``kind="transaction"``), a prepared transaction
    (``"prepared"``) or a replication slot (``"replication_slot"``)."""

    kind: str
    xid_age: int  # transactions since its xmin: how far the horizon is held back
    age_seconds: float | None  # since its transaction began (None for a slot)
    pid: int | None = None  # the backend (a slot's: the walsender using it, if any)
    application_name: str | None = None
    name: str | None = None  # a slot's name, a prepared transaction's gid
    state: str | None = None  # pg_stat_activity.state, e.g. "idle in transaction"
    query_start: datetime | None = None
    query: str | None = None  # the start of its current or last statement
    catalog_only: bool = False  # a logical slot's catalog_xmin: holds back the catalogs only

    def describe(self) -> str:
        """Who it is, in words, for a health message."""
        if self.kind == "replication_slot":
            user = f", used by pid {self.pid}" if self.pid is not None else ", inactive"
            what = " (its catalog_xmin: the system catalogs only)" if self.catalog_only else ""
            return f"replication slot {self.name}{user}{what}"
        if self.kind == "prepared":
            return f"prepared transaction {self.name!r}"
        app = f" ({self.application_name})" if self.application_name else ""
        state = f", {self.state}" if self.state else ""
        return f"pid {self.pid}{app}{state}"


@dataclass(frozen=True)
class TableHealth:
    """The jobs table's health on one engine. Postgres fills the tuple counts, vacuum
    times, indexes and holders; SQLite the page counts and the WAL file's size. What an
    engine cannot tell is None, and ``not_measured`` says what and why."""

    engine: str
    table: str = "jobs"
    live_tuples: int | None = None
    dead_tuples: int | None = None
    last_autovacuum: datetime | None = None
    last_autoanalyze: datetime | None = None
    last_vacuum: datetime | None = None  # a manual VACUUM
    size_bytes: int | None = None  # the table's heap (Postgres) or the file (SQLite)
    indexes: list[IndexHealth] = field(default_factory=list)
    holders: list[VacuumHolder] = field(default_factory=list)  # the oldest first
    page_count: int | None = None  # SQLite: pages in the file
    free_pages: int | None = None  # SQLite: pages on the freelist (reused before growing)
    page_size: int | None = None
    wal_bytes: int | None = None  # SQLite: the -wal file's size (0 when there is none)
    #: Partitioned history (Postgres): each range's width in seconds (None: one table),
    #: how many ranges there are and the bytes their leaves hold.
    history_interval: int | None = None
    history_ranges: int | None = None
    history_bytes: int | None = None
    not_measured: dict[str, str] = field(default_factory=dict)  # what -> why

    @property
    def dead_ratio(self) -> float | None:
        """Dead tuples over all tuples (what a claim may step over), from the statistics."""
        if self.live_tuples is None or self.dead_tuples is None:
            return None
        total = self.live_tuples + self.dead_tuples
        return self.dead_tuples / total if total else 0.0

    @property
    def free_ratio(self) -> float | None:
        """SQLite: free pages over the file's pages."""
        if self.page_count is None or self.free_pages is None:
            return None
        return self.free_pages / self.page_count if self.page_count else 0.0

    @property
    def oldest_holder(self) -> VacuumHolder | None:
        return self.holders[0] if self.holders else None
