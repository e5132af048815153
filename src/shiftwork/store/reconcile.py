"""The start-up reconcile's pure half: the declared set's fingerprint, and what to write.

Every worker start makes the stored code schedules match the declared ones
(``ScheduleStoreLogic.schedules_reconcile``). Most starts change nothing, so the database
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
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any, TypeVar

from shiftwork.schedules.definition import ScheduleDef
from shiftwork.store.runtime_schedules import RUNTIME

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
