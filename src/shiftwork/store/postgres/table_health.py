"""PostgreSQL: the jobs table's health from the catalog and statistics views
(table_health.sql), one read of three statements."""

from __future__ import annotations

from typing import Any

from shiftwork.model.table_health import IndexHealth, TableHealth, VacuumHolder
from shiftwork.store.postgres.partitions import ranges_of
from shiftwork.store.rows import aware


def read_table_health(c: Any, q: dict[str, str], partitioned: bool = False) -> TableHealth:
    """``c``: an open connection; ``q``: the store's named queries; ``partitioned``: the
    table is jobs_hot, and the history's ranges are summed up too."""
    row = c.execute(q["table_health_table"], {}).fetchone()
    indexes = [IndexHealth(r[0], int(r[1]), None if r[2] is None else int(r[2]))
               for r in c.execute(q["table_health_indexes"], {}).fetchall()]
    holders = [VacuumHolder(kind=r[0], xid_age=int(r[1]), age_seconds=r[2], pid=r[3],
                            application_name=r[4] or None, name=r[5], state=r[6],
                            query_start=aware(r[7]), query=r[8], catalog_only=bool(r[9]))
               for r in c.execute(q["table_health_holders"], {}).fetchall()]
    live, dead, autovacuum, autoanalyze, vacuum, size = row
    history: dict[str, Any] = {}
    if partitioned:
        interval = int(c.execute(q["history_layout_get"]).fetchone()[0])
        ranges = ranges_of(c.execute(q["history_parts"]).fetchall(), interval)
        history = {"history_interval": interval, "history_ranges": len(ranges),
                   "history_bytes": sum((r.done_bytes or 0) + (r.dead_bytes or 0)
                                        for r in ranges)}
    return TableHealth(
        engine="postgres", table="jobs_hot" if partitioned else "jobs", **history,
        live_tuples=None if live is None else int(live),
        dead_tuples=None if dead is None else int(dead), last_autovacuum=aware(autovacuum),
        last_autoanalyze=aware(autoanalyze), last_vacuum=aware(vacuum), size_bytes=int(size),
        indexes=indexes, holders=holders)
