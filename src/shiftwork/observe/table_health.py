"""The jobs table's own health, judged: dead tuples, what holds vacuum back, index bloat
(Postgres); free pages and the WAL file (SQLite).

A Postgres queue's slow death is dead tuples: a transaction left open elsewhere holds
the xmin horizon back, autovacuum cannot clean the jobs table, and every claim steps
over the dead entries. ``Store.table_health()`` reads the statistics and catalog views
only (never the table); :func:`table_problems` holds it against the thresholds of
``Settings`` for ``shiftwork health``; :class:`TableHealthCache` keeps one reading for
``Settings.table_health_every`` seconds for the metrics scrape and the dashboard.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from shiftwork.core.settings import Settings
from shiftwork.model.table_health import TableHealth, VacuumHolder
from shiftwork.model.visibility import Problem
from shiftwork.observe.text import format_age, format_time

if TYPE_CHECKING:
    from shiftwork.app import App

WARNING = "warning"
UNHEALTHY = "unhealthy"


def format_bytes(size: int | None) -> str:
    """``8192`` -> ``"8.0 kB"``; ``-`` when unknown."""
    if size is None:
        return "-"
    value = float(size)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"  # not reached


def _level(value: float, warning: float, unhealthy: float | None = None) -> str | None:
    if unhealthy is not None and value > unhealthy:
        return UNHEALTHY
    return WARNING if value > warning else None


def holder_problem(s: Settings, h: VacuumHolder) -> Problem | None:
    """A holder over the xmin thresholds: by its transaction's age in seconds, and by
    its age in transactions (the only measure a replication slot has)."""
    levels = [_level(h.xid_age, s.xmin_xids_warning, s.xmin_xids_unhealthy)]
    if h.age_seconds is not None:
        levels.append(_level(h.age_seconds, s.xmin_age_warning, s.xmin_age_unhealthy))
    level = UNHEALTHY if UNHEALTHY in levels else WARNING if WARNING in levels else None
    if level is None:
        return None
    began = f"began {format_age(h.age_seconds)} ago, " if h.age_seconds is not None else ""
    query = (f", started {format_time(h.query_start)} UTC" if h.query_start else "")
    what = ("the system catalogs' dead rows" if h.catalog_only
            else "the jobs table's dead rows")
    fix = {"transaction": f"end it (SELECT pg_terminate_backend({h.pid}) if it is stuck) and "
                          "set idle_in_transaction_session_timeout",
           "prepared": f"COMMIT PREPARED or ROLLBACK PREPARED {h.name!r}",
           "replication_slot": "catch its consumer up, or drop the slot if it is abandoned"
           }.get(h.kind, "end it")
    subject = str(h.pid) if h.kind == "transaction" else str(h.name)
    return Problem(
        "xmin_horizon", subject,
        f"{h.describe()} holds back the xmin horizon ({began}{h.xid_age} transactions "
        f"old{query}): vacuum cannot remove {what} newer than it; {fix}", level)


def table_problems(s: Settings, t: TableHealth) -> list[Problem]:
    """``t`` against the thresholds of ``s``: warnings and unhealthy problems."""
    problems = []
    ratio = t.dead_ratio
    if ratio is not None and (t.dead_tuples or 0) >= s.table_dead_min:
        level = _level(ratio, s.table_dead_ratio_warning, s.table_dead_ratio_unhealthy)
        if level:
            vacuumed = max((v for v in (t.last_autovacuum, t.last_vacuum) if v), default=None)
            problems.append(Problem(
                "table_dead_tuples", t.table,
                f"table {t.table}: {t.dead_tuples} dead tuples, {ratio:.0%} of its rows "
                f"({t.live_tuples} live), last vacuumed {format_time(vacuumed)} UTC: claims "
                "step over them; is something holding back vacuum (see xmin_horizon), or "
                "is autovacuum behind (docs/deploy.md, \"Tuning the queue table\")?", level))
    problems.extend(p for p in (holder_problem(s, h) for h in t.holders) if p is not None)
    for ix in t.indexes:
        bloat = ix.bloat_ratio
        if bloat is not None and ix.size_bytes >= s.index_bloat_min_bytes \
                and bloat > s.index_bloat_warning:
            problems.append(Problem(
                "index_bloat", ix.name,
                f"index {ix.name}: about {bloat:.0%} of its {format_bytes(ix.size_bytes)} is "
                "estimated wasted (from the catalog): REINDEX INDEX CONCURRENTLY it", WARNING))
    free = t.free_ratio
    if free is not None and (t.size_bytes or 0) >= s.sqlite_min_bytes \
            and free > s.sqlite_free_ratio_warning:
        problems.append(Problem(
            "sqlite_free_pages", "database",
            f"{t.free_pages} of the file's {t.page_count} pages ({free:.0%}) are free: later "
            "writes reuse them; VACUUM (with no worker running) returns them", WARNING))
    if t.wal_bytes is not None and t.wal_bytes > s.sqlite_wal_bytes_warning:
        problems.append(Problem(
            "sqlite_wal", "database",
            f"the -wal file is {format_bytes(t.wal_bytes)}: a checkpoint cannot restart it "
            "while a reader stays open (a long-lived connection in a transaction?)", WARNING))
    return problems


def table_lines(t: TableHealth) -> list[str]:
    """The table's health in a few lines, for ``shiftwork health``."""
    if t.engine == "sqlite":
        return [f"database file: {format_bytes(t.size_bytes)}, {t.free_pages} of "
                f"{t.page_count} pages free ({(t.free_ratio or 0):.0%}), -wal file "
                f"{format_bytes(t.wal_bytes)}",
                "not on SQLite: " + ", ".join(sorted(k for k in t.not_measured
                                                     if k != "checkpoint lag"))
                + "; checkpoint lag: not measurable, the -wal file's size stands for it"]
    ratio = f" ({t.dead_ratio:.0%})" if t.dead_ratio is not None else ""
    lines = [f"table {t.table}: {t.live_tuples} live, {t.dead_tuples} dead tuples{ratio}, "
             f"{format_bytes(t.size_bytes)}; last autovacuum {format_time(t.last_autovacuum)}, "
             f"last autoanalyze {format_time(t.last_autoanalyze)} (UTC)"]
    oldest = t.oldest_holder
    if oldest is None:
        lines.append("xmin horizon: nothing holds it back")
    else:
        age = (f"{format_age(oldest.age_seconds)}, " if oldest.age_seconds is not None else "")
        lines.append(f"xmin horizon: held by {oldest.describe()} ({age}"
                     f"{oldest.xid_age} transactions)")
    shown = [f"{ix.name} {format_bytes(ix.size_bytes)}"
             + (f" ~{ix.bloat_ratio:.0%} bloat" if ix.bloat_ratio is not None else "")
             for ix in t.indexes]
    lines.append("indexes (bloat estimated from the catalog): " + ", ".join(shown))
    if t.history_interval is not None:
        width = "day" if t.history_interval == 86400 else f"{t.history_interval} s"
        lines.append(f"history: partitioned by {width}, {t.history_ranges} ranges, "
                     f"{format_bytes(t.history_bytes)} (dropped whole at their retention)")
    return lines


def table_json(t: TableHealth) -> dict[str, Any]:
    """The table's health as JSON values, for ``shiftwork health --json``."""
    def when(value: Any) -> str | None:
        return value.isoformat() if value is not None else None

    return {
        "engine": t.engine, "table": t.table, "live_tuples": t.live_tuples,
        "dead_tuples": t.dead_tuples, "dead_ratio": t.dead_ratio,
        "last_autovacuum": when(t.last_autovacuum),
        "last_autoanalyze": when(t.last_autoanalyze), "last_vacuum": when(t.last_vacuum),
        "size_bytes": t.size_bytes,
        "indexes": [{"name": ix.name, "size_bytes": ix.size_bytes,
                     "bloat_bytes_estimate": ix.bloat_bytes} for ix in t.indexes],
        "xmin_holders": [{
            "kind": h.kind, "xid_age": h.xid_age, "age_seconds": h.age_seconds, "pid": h.pid,
            "application_name": h.application_name, "name": h.name, "state": h.state,
            "query_start": when(h.query_start), "catalog_only": h.catalog_only,
        } for h in t.holders],
        "page_count": t.page_count, "free_pages": t.free_pages, "page_size": t.page_size,
        "wal_bytes": t.wal_bytes, "not_measured": t.not_measured,
        "history": None if t.history_interval is None else {
            "interval_seconds": t.history_interval, "ranges": t.history_ranges,
            "bytes": t.history_bytes},
    }


class TableHealthCache:
    """One reading of ``app.store.table_health()`` kept ``Settings.table_health_every``
    seconds (on the app's monotonic clock), so a scrape every few seconds, or many
    dashboards, cost one catalog read per period. A failed read is not kept."""

    def __init__(self, app: App) -> None:
        self.app = app
        self._lock = threading.Lock()
        self._value: TableHealth | None = None
        self._read_at = 0.0

    def get(self) -> TableHealth:
        clock = self.app.clock
        with self._lock:
            if self._value is None or \
                    clock.monotonic() - self._read_at >= self.app.settings.table_health_every:
                self._value = self.app.store.table_health()
                self._read_at = clock.monotonic()
            return self._value
