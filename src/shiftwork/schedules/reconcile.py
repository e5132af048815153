"""The start-up reconcile's pure half: the declared set's fingerprint, and what to write.

Every worker start makes the stored code schedules match the declared ones
(:meth:`Declarations.reconcile`). Most starts change nothing, so the database
keeps the fingerprint of the set it last reconciled (``schedules_reconciled``, migration
0017), and a trigger on ``schedules`` deletes it on any write to a definition, an origin
or a removal mark, whoever makes it (``app.schedules.add`` / ``.remove``, a reconcile of
another set, an older shiftwork, a hand edit). A start that finds its own fingerprint
there reads that one row and writes nothing; any other reads each stored schedule's
hash (:func:`plan_reconcile` decides) and writes the differences a batch per kind.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from datetime import datetime
from operator import attrgetter
from typing import Any, TypeVar

from shiftwork.core.errors import ConfigurationError
from shiftwork.schedules.definition import ScheduleDef
from shiftwork.schedules.errors import UnknownScheduleError
from shiftwork.schedules.firing import now_of
from shiftwork.schedules.origin import CODE, RUNTIME, ScheduleNameTaken
from shiftwork.schedules.rows import def_params
from shiftwork.store.base import ScheduleStatements

#: Part of every fingerprint: a change to what a reconcile writes (or to the definition
#: hash) changes it, so a database reconciled by older code is reconciled again.
FINGERPRINT_VERSION = "shiftwork-reconcile-1"
#: Rows per batch statement (a created definition is ~300 bytes of JSON).
RECONCILE_BATCH = 10_000

_FIELDS = attrgetter(*(f.name for f in fields(ScheduleDef)))
_BY_NAME = attrgetter("name")

T = TypeVar("T")


def fingerprint(defs: list[ScheduleDef]) -> str:
    """A digest of every field of every declared schedule, in name order.

    One JSON text of the values (one flat list: 100,000 little tuples kept alive at once
    cost the garbage collector as much as the rest), hashed once: ~0.1 s at 100,000."""
    flat: list[Any] = [FINGERPRINT_VERSION]
    extend = flat.extend
    for d in sorted(defs, key=_BY_NAME):
        extend(_FIELDS(d))
    text = json.dumps(flat, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class ReconcilePlan:
    """What a reconcile writes, and its report ``{name: created | changed | ...}``."""

    report: dict[str, str] = field(default_factory=dict)
    create: list[ScheduleDef] = field(default_factory=list)
    #: Changed or revived definitions, each with whether its cursor starts afresh.
    update: list[tuple[ScheduleDef, bool]] = field(default_factory=list)
    #: Run-time rows whose names code declares now: code owns them from here on.
    take_over: list[str] = field(default_factory=list)
    remove: list[str] = field(default_factory=list)


def plan_reconcile(defs: list[ScheduleDef], stored: dict[str, dict[str, Any]]
                   ) -> ReconcilePlan:
    """Compare the declared definitions with the stored rows (``name``,
    ``definition_hash``, ``removed``, ``origin``, ``cron``, ``tz``; every schedule)."""
    plan = ReconcilePlan()
    report = plan.report
    for d in defs:
        row = stored.get(d.name)
        if row is None:
            plan.create.append(d)
            report[d.name] = "created"
            continue
        if row["origin"] == RUNTIME:
            plan.take_over.append(d.name)
        revived = bool(row["removed"])
        if not revived and row["definition_hash"] == d.definition_hash():
            report[d.name] = "unchanged"
            continue
        reset = revived or (row["cron"], row["tz"]) != (d.cron, d.tz)
        plan.update.append((d, reset))
        report[d.name] = "revived" if revived else "changed"
    for name, row in stored.items():
        # Run-time rows are not code's to remove.
        if row["origin"] != RUNTIME and not row["removed"] and name not in report:
            plan.remove.append(name)
            report[name] = "removed"
    return plan


def chunks(items: list[T]) -> Iterator[list[T]]:
    size = RECONCILE_BATCH  # read at each call (a test makes it small)
    for i in range(0, len(items), size):
        yield items[i:i + size]


class Declarations:
    """The writes of definitions: the start-up reconcile, and a run-time schedule added or
    removed; each one transaction under the schedules' lock."""

    def __init__(self, sql: ScheduleStatements) -> None:
        self.sql = sql

    def reconcile(self, defs: list[ScheduleDef],
                            first_fire: Callable[[ScheduleDef, datetime], datetime]
                            ) -> dict[str, str]:
        """Make the stored schedules match the declared ones.

        New ones are inserted with their first fire after now; changed ones are
        updated, keeping their cursor unless the cron or the zone changed; unchanged
        ones are left alone (cursor intact); stored ones no longer declared are marked
        removed (kept, with their history; declaring them again revives them).
        Run-time schedules (origin ``runtime``) are never removed here; a declaration
        in code takes over a run-time row of the same name.
        Returns ``{name: created | changed | unchanged | revived | removed}``.

        One transaction, under the schedules' lock. When the database holds this
        declared set's fingerprint (written by the last reconcile; a trigger deletes it
        on any other write to a definition) everything is unchanged: one row is read and
        nothing written. Otherwise each stored schedule's hash is read and the
        differences are written a batch statement per kind (store/reconcile.py).
        """
        mark = fingerprint(defs)
        with self.sql.tx() as c:
            self.sql.rows(c, "schedules_lock_all")
            if self.sql.one(c, "schedules_reconciled_get", fingerprint=mark) is not None:
                return {d.name: "unchanged" for d in defs}
            now = now_of(self.sql, c, None, None)
            stored = {r["name"]: r for r in self.sql.rows(c, "schedules_declared")}
            plan = plan_reconcile(defs, stored)
            for names in chunks(plan.take_over):
                self._set_origin(c, names, CODE)
            for part in chunks(plan.create):
                self._insert_defs(c, part, first_fire, now)
            for batch in chunks(plan.update):
                self._update_defs(c, batch, first_fire, now)
            for names in chunks(plan.remove):
                self._mark_removed(c, names)
            self.sql.rows(c, "schedules_reconciled_set", fingerprint=mark)
        return plan.report

    # The writes of definitions, each one statement for many (the reconcile's batches) or
    # for one (a run-time schedule added or removed).

    def _insert_defs(self, c: Any, defs: list[ScheduleDef],
                       first_fire: Callable[[ScheduleDef, datetime], datetime],
                       now: datetime) -> None:
        t = self.sql.instant
        self.sql.rows(c, "schedules_insert_batch", rows=self.sql.json([
            {**def_params(d), "next_fire_at": t(first_fire(d, now))} for d in defs]))

    def _update_defs(self, c: Any, updates: list[tuple[ScheduleDef, bool]],
                       first_fire: Callable[[ScheduleDef, datetime], datetime],
                       now: datetime) -> None:
        """Changed or revived definitions, each with whether its cursor starts afresh."""
        t = self.sql.instant
        self.sql.rows(c, "schedules_update_definition_batch", rows=self.sql.json([
            {**def_params(d), "reset_cursor": reset,
             "next_fire_at": t(first_fire(d, now)) if reset else None}
            for d, reset in updates]))

    def _set_origin(self, c: Any, names: list[str], origin: str) -> None:
        self.sql.rows(c, "schedules_set_origin_batch", names=self.sql.json(names), origin=origin)

    def _mark_removed(self, c: Any, names: list[str]) -> None:
        self.sql.rows(c, "schedules_mark_removed_batch", names=self.sql.json(names))

    def add(self, defn: ScheduleDef,
                      first_fire: Callable[[ScheduleDef, datetime], datetime],
                      replace: bool = False) -> str:
        """Store ``defn`` as a run-time schedule; returns created | revived | replaced.

        One transaction, under the same lock as the reconcile, so a worker starting at the
        same instant either sees the new row or runs before it is written.
        """
        with self.sql.tx() as c:
            self.sql.rows(c, "schedules_lock_all")
            now = now_of(self.sql, c, None, None)
            row = self.sql.one(c, "schedules_get", name=defn.name)
            if row is None:
                self._insert_defs(c, [defn], first_fire, now)
                how = "created"
            else:
                live = row["removed_at"] is None
                if live and row.get("origin", CODE) == CODE:
                    raise ScheduleNameTaken(
                        f"schedule {defn.name!r} is declared in code; pick another name for a "
                        "run-time schedule (code schedules change with the code)")
                if live and not replace:
                    raise ScheduleNameTaken(
                        f"a run-time schedule named {defn.name!r} already exists; remove it first "
                        "or pass replace=True")
                reset = not live or (row["cron"], row["tz"]) != (defn.cron, defn.tz)
                self._update_defs(c, [(defn, reset)], first_fire, now)
                how = "replaced" if live else "revived"
            self._set_origin(c, [defn.name], RUNTIME)
        return how

    def remove(self, name: str) -> None:
        """Mark a run-time schedule removed (its history is kept; adding it again revives it)."""
        with self.sql.tx() as c:
            self.sql.rows(c, "schedules_lock_all")
            row = self.sql.one(c, "schedules_get", name=name)
            if row is None or row["removed_at"] is not None:
                raise UnknownScheduleError(f"no run-time schedule named {name!r}")
            if row.get("origin", CODE) != RUNTIME:
                raise ConfigurationError(
                    f"schedule {name!r} is declared in code: remove it from the code (the next "
                    "worker start removes it), or pause it")
            self._mark_removed(c, [name])

    # -- the leader's pass ----------------------------------------------------------------
