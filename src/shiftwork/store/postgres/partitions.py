"""Partitioned history (PostgreSQL): finished jobs in ranges of finish time, each range
split into a leaf of succeeded and cancelled jobs and a leaf of dead ones, so that
retention drops a leaf instead of deleting its rows, and the claim path never walks them.

The jobs table becomes the partitioned parent; what it held becomes its DEFAULT
partition, ``jobs_hot``: every unfinished job, and the jobs finished before the
conversion, which the pruner still deletes as before until none are left. The
conversion is online (:meth:`PostgresPartitions.convert`): the one long step, checking
that no finished row belongs to a future range, is a constraint validation, which does
not block writes; the swap itself is one short transaction under the table's lock.

A completion moves its row from ``jobs_hot`` into a leaf (Postgres does it as a delete
and an insert). Foreign keys cannot point at a partitioned table, so the conversion
drops the ones that cascaded from jobs and ``jobs_forget`` (a function) and
:meth:`PostgresPartitions.maintain` delete those rows instead.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from psycopg import sql

from shiftwork.core.errors import ConfigurationError, StorageError
from shiftwork.model.history_layout import INTERVALS, HistoryRange, Upkeep
from shiftwork.store.postgres.core import PostgresCore

log = logging.getLogger("shiftwork.store.postgres")

#: Ranges made ahead of the clock: a range is made days (or hours) before a job needs it.
AHEAD = 3
#: The tables whose rows belong to a job, with the column naming it: the foreign keys
#: the conversion drops must all be here, so that jobs_forget deletes their rows.
CHILDREN: dict[str, str] = {
    "job_deps": "job_id", "job_logs": "job_id", "workflow_events": "job_id",
    "workflow_joins": "job_id", "workflow_runs": "job_id", "workflow_state": "job_id",
    "workflow_steps": "job_id", "workflow_streams": "job_id", "workflow_updates": "job_id",
}
#: How long a DDL statement waits for its lock before giving way to the queue's own
#: statements, and how often it tries again.
LOCK_TIMEOUT = "2s"
LOCK_TRIES = 10
#: The bound is at least this far ahead (seconds), plus a second per VALIDATE_RATE rows
#: (the validating scan runs at 100,000-300,000 rows/s on a small machine).
VALIDATE_MARGIN = 900
VALIDATE_RATE = 20_000
#: pg_get_indexdef's text: whether unique, and what follows the table's name.
_INDEX_DEF = re.compile(r"^CREATE (UNIQUE )?INDEX \S+ ON \S+ (.*)$", re.S)
_RANGE = re.compile(r"^jobs_h(\d{10})$")
LATER = "jobs_h_later"


def range_name(start: datetime) -> str:
    return "jobs_h" + start.astimezone(UTC).strftime("%Y%m%d%H")


def range_start(name: str) -> datetime:
    match = _RANGE.match(name)
    assert match is not None, name
    return datetime.strptime(match.group(1), "%Y%m%d%H").replace(tzinfo=UTC)


def ranges_of(rows: list[Any], seconds: int) -> list[HistoryRange]:
    """history_parts' rows (range, leaf, bytes) as ranges, each with its leaves' sizes."""
    sizes: dict[str, dict[str, int]] = {}
    for part, leaf, size in rows:
        leaves = sizes.setdefault(part, {})
        if leaf is not None:
            leaves[leaf.rsplit("_", 1)[-1]] = int(size)
    width = timedelta(seconds=seconds)
    return [HistoryRange(name, range_start(name), range_start(name) + width,
                         leaves.get("done"), leaves.get("dead"))
            for name, leaves in sizes.items()]


def boundary_after(now: datetime, seconds: int) -> datetime:
    """The first range boundary after ``now``: boundaries are multiples of ``seconds``
    since the epoch (midnight UTC for days)."""
    epoch = int(now.timestamp())
    return datetime.fromtimestamp((epoch // seconds + 1) * seconds, UTC)


class PostgresPartitions:
    """The conversion, the upkeep and the listing of partitioned history."""

    def __init__(self, core: PostgresCore) -> None:
        self.core = core
        self.q = core.q
        self.schema = core.schema

    # -- reading -----------------------------------------------------------------------

    def layout(self) -> tuple[int, datetime] | None:
        """``(interval_seconds, since)`` once partitioned, else None."""
        with self.core._conn() as c:
            return self._layout(c)

    def ranges(self) -> list[HistoryRange]:
        """The ranges of finish times, oldest first, with their leaves' sizes."""
        with self.core._conn() as c:
            layout = self._layout(c)
            return [] if layout is None else self._ranges(c, layout[0])

    def _layout(self, c: psycopg.Connection[Any]) -> tuple[int, datetime] | None:
        if not self.core.find_layout(c):
            return None
        row = c.execute(self.q["history_layout_get"]).fetchone()
        return None if row is None else (int(row[0]), row[1])

    def _ranges(self, c: psycopg.Connection[Any], seconds: int) -> list[HistoryRange]:
        return ranges_of(c.execute(self.q["history_parts"]).fetchall(), seconds)

    # -- the conversion ----------------------------------------------------------------

    def convert(self, interval: str = "day", say: Callable[[str], None] = log.info) -> bool:
        """Partition the jobs table, online; False if it already is. ``interval``: each
        range's width (``day`` or ``hour``). ``say`` hears each step as it starts."""
        if interval not in INTERVALS:
            raise ConfigurationError(f"unknown history interval {interval!r}: "
                                     f"use one of {', '.join(INTERVALS)}")
        seconds = INTERVALS[interval]
        with self.core._conn() as c:
            if self.core.find_layout(c):
                return False
            now = self._scalar(c, self.q["db_now"], self.core._p())
            keys = c.execute(self.q["history_foreign_keys"]).fetchall()
            unknown = [f"{table} ({column})" for table, _, column in keys
                       if table.rsplit(".", 1)[-1].strip('"') not in CHILDREN]
            if unknown:
                raise ConfigurationError(
                    "cannot partition the jobs table: these foreign keys point at it, and "
                    "a partitioned table cannot be referenced: " + ", ".join(unknown))
            # The validation below must end before the bound passes: from then on a job
            # finishing would break the constraint. A margin for the table's size.
            rows = self._scalar(c, "SELECT greatest(reltuples, 0) FROM pg_class WHERE oid = %s"
                             "::regclass", (f'"{self.schema}".jobs',))
            margin = timedelta(seconds=VALIDATE_MARGIN + rows / VALIDATE_RATE)
            bound = boundary_after(now + margin, seconds)
            # An earlier try that stopped after adding the bound: keep its bound.
            earlier = c.execute(
                "SELECT substring(pg_get_constraintdef(oid) from '< ''([^'']+)''')"
                "::timestamptz FROM pg_constraint WHERE conname = 'jobs_hot_bound' "
                "AND conrelid = %s::regclass", (f'"{self.schema}".jobs',)).fetchone()
            if earlier is None:
                say(f"adding a bound: jobs finished before {bound:%Y-%m-%d %H:%M} UTC stay "
                    "in the jobs table (a moment's lock)")
                self._ddl(c, lambda: c.execute(self._sql("history_bound_add",
                                                         bound=sql.Literal(bound))))
            else:
                bound = earlier[0]
            say("validating the bound: one scan of the table, while the queue runs")
            c.execute(self.q["history_bound_validate"])
            say("indexing workflow_events by job (concurrently)")
            c.execute(self.q["history_events_index"])
            say("swapping in the partitioned table (one short transaction)")
            self._ddl(c, lambda: self._swap(c, keys, seconds, bound))
            say("analyzing the partitioned table (its planner statistics; no lock on writes)")
            c.execute(sql.SQL("ANALYZE {}.jobs").format(sql.Identifier(self.schema)))
        self.core.use_layout(True)
        say(f"partitioned: finished jobs go to ranges of one {interval} from "
            f"{bound:%Y-%m-%d %H:%M} UTC")
        return True

    def _swap(self, c: psycopg.Connection[Any], keys: list[Any], seconds: int,
              bound: datetime) -> None:
        with c.transaction():
            now = self._scalar(c, self.q["db_now"], self.core._p())
            if now >= bound:
                raise StorageError(f"the bound {bound} passed before the swap; run the "
                                   "conversion again for a later one")
            c.execute(sql.SQL("LOCK TABLE {}.jobs IN ACCESS EXCLUSIVE MODE")
                      .format(sql.Identifier(self.schema)))
            for table, name, _ in keys:
                c.execute(sql.SQL("ALTER TABLE {} DROP CONSTRAINT {}").format(
                    sql.SQL(table), sql.Identifier(name)))
            c.execute(self.q["history_swap"].encode())
            c.execute(self._sql("history_layout_add", seconds=sql.Literal(seconds),
                                bound=sql.Literal(bound)))
            c.execute(self._forget_function().encode())
            width = timedelta(seconds=seconds)
            for n in range(AHEAD):
                self._create_range(c, bound + n * width, width)
            self._later(c, "history_later_create", bound + AHEAD * width)
            # The functions (the SQL enqueue's keyed insert) again, naming jobs_hot.
            self.core.use_layout(True)
            c.execute(self.core.functions_sql().encode())

    def _forget_function(self) -> str:
        s = f'"{self.schema}"'
        deletes = "".join(f"    DELETE FROM {s}.{table} WHERE {column} = ANY(ids);\n"
                          for table, column in sorted(CHILDREN.items()))
        return (f"CREATE OR REPLACE FUNCTION {s}.jobs_forget(ids bigint[]) RETURNS void\n"
                f"    LANGUAGE sql AS $$\n{deletes}$$")

    # -- the upkeep --------------------------------------------------------------------

    def maintain(self, retention_finished: float, retention_dead: float) -> Upkeep:
        """Make the ranges ahead of the clock, move what landed past them, and drop each
        leaf past its retention (succeeded and cancelled: ``retention_finished`` seconds
        after its range ends; dead: ``retention_dead``), deleting its jobs' rows of other
        tables first. Locks wait at most LOCK_TIMEOUT; what could not be done is done at
        the next call."""
        done = Upkeep()
        with self.core._conn() as c:
            layout = self._layout(c)
            if layout is None:
                return done
            width = timedelta(seconds=layout[0])
            now = self._scalar(c, self.q["db_now"], self.core._p())
            ranges = self._ranges(c, layout[0])
            last = max((r.end for r in ranges), default=layout[1])
            horizon = boundary_after(now, layout[0]) + (AHEAD - 1) * width
            if last < horizon:
                try:
                    done.created, done.moved = self._ddl(
                        c, lambda: self._extend(c, last, horizon, width))
                except StorageError as exc:
                    log.warning("history ranges not extended: %s", exc)
            for r in ranges:
                left = 0  # leaves of this range still there
                for kind, keep, size in (("done", retention_finished, r.done_bytes),
                                         ("dead", retention_dead, r.dead_bytes)):
                    if size is None:
                        continue
                    left += 1
                    if r.end + timedelta(seconds=keep) <= now:
                        try:
                            done.forgotten += self._drop_leaf(c, f"{r.name}_{kind}")
                            done.dropped.append(f"{r.name}_{kind}")
                            left -= 1
                        except StorageError as exc:
                            log.warning("history leaf %s_%s not dropped: %s", r.name,
                                        kind, exc)
                if left == 0:
                    try:
                        self._ddl(c, lambda name=r.name: c.execute(  # type: ignore[misc]
                            self._sql("history_drop", rel=self._ident(name))))
                        done.dropped.append(r.name)
                    except StorageError as exc:
                        log.warning("history range %s not dropped: %s", r.name, exc)
        return done

    def _extend(self, c: psycopg.Connection[Any], last: datetime, horizon: datetime,
                width: timedelta) -> tuple[list[str], int]:
        """New ranges from ``last`` to ``horizon``: the catch-all is detached, the ranges
        made, its rows that now have a range moved there, and it is attached again. The
        new ranges' names, and how many jobs moved."""
        created = []
        with c.transaction():
            self._later(c, "history_later_detach")
            start = last
            while start < horizon:
                created.append(self._create_range(c, start, width))
                start += width
            moved = c.execute(self._sql("history_later_move", later=self._ident(LATER),
                                        end=sql.Literal(horizon))).rowcount
            self._later(c, "history_later_attach", horizon)
        return created, moved

    def _create_range(self, c: psycopg.Connection[Any], start: datetime,
                      width: timedelta) -> str:
        name = range_name(start)
        c.execute(self._sql("history_part_create", part=self._ident(name),
                            done=self._ident(name + "_done"), dead=self._ident(name + "_dead"),
                            start=sql.Literal(start), end=sql.Literal(start + width)))
        for leaf in (name + "_done", name + "_dead"):
            self._index(c, leaf)
        return name

    def _later(self, c: psycopg.Connection[Any], query: str,
               start: datetime | None = None) -> None:
        c.execute(self._sql(query, later=self._ident(LATER), start=sql.Literal(start)))
        if query == "history_later_create":
            self._index(c, LATER)

    def _index(self, c: psycopg.Connection[Any], leaf: str) -> None:
        """jobs_hot's indexes that can hold finished jobs, on ``leaf``."""
        for definition, index in c.execute(self.q["history_hot_indexes"]).fetchall():
            shape = _INDEX_DEF.match(definition)
            assert shape is not None, definition
            name = self._q(leaf + "_" + index.removeprefix("jobs_"))
            text = (f"CREATE {shape.group(1) or ''}INDEX {name} "
                    f'ON "{self.schema}".{self._q(leaf)} {shape.group(2)}')
            c.execute(text.encode())

    def _drop_leaf(self, c: psycopg.Connection[Any], leaf: str) -> int:
        """Delete the rows of other tables that belong to ``leaf``'s jobs, then drop it."""
        forgotten = 0
        for table, column in sorted(CHILDREN.items()):
            forgotten += c.execute(self._sql(
                "history_leaf_forget", child=self._ident(table), col=sql.Identifier(column),
                leaf=self._ident(leaf))).rowcount
        self._ddl(c, lambda: c.execute(self._sql("history_drop", rel=self._ident(leaf))))
        return forgotten

    # -- helpers -----------------------------------------------------------------------

    def _ident(self, name: str) -> sql.Composed:
        return sql.SQL(".").join([sql.Identifier(self.schema), sql.Identifier(name)])

    @staticmethod
    def _scalar(c: psycopg.Connection[Any], query: Any, params: Any) -> Any:
        row = c.execute(query, params).fetchone()
        assert row is not None
        return row[0]

    @staticmethod
    def _q(name: str) -> str:
        return '"' + name.replace('"', '""') + '"'

    def _sql(self, query: str, **parts: Any) -> sql.Composed:
        return sql.SQL(self.q[query]).format(**parts)

    def _ddl(self, c: psycopg.Connection[Any], step: Callable[[], Any]) -> Any:
        """``step`` in a transaction with a short lock_timeout, tried again while another
        holds the lock: DDL waiting in the lock queue would block every claim queued
        behind it. ``SET LOCAL``: behind a transaction pooler (PgBouncer) a session's
        SET would reach another server connection than the DDL, and stay there."""
        for attempt in range(LOCK_TRIES):
            try:
                with c.transaction():
                    c.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
                    return step()
            except psycopg.errors.LockNotAvailable:
                time.sleep(min(0.1 * 2 ** attempt, 5.0))
        raise StorageError(f"could not take the lock for partitioned history in "
                           f"{LOCK_TRIES} tries of {LOCK_TIMEOUT}")
