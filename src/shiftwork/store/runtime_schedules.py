"""Schedules added and removed at run time (``app.schedules.add`` / ``.remove``), stored
beside the ones declared in code and told apart by the ``origin`` column.

Code owns what it declares: the start-up reconcile inserts, updates and removes only
``origin = 'code'`` rows. A run-time row is left alone by it, so it survives every worker
start; a name declared in code cannot be added at run time (nor removed that way).
Engine-neutral: it runs on the schedule store's primitives (``store/schedules.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from ..errors import ConfigurationError
from ..schedule import ScheduleDef

if TYPE_CHECKING:
    from .schedules import ScheduleStoreLogic

RUNTIME = "runtime"
CODE = "code"


class ScheduleNameTaken(ConfigurationError):
    """A run-time schedule's name is already used (by code, or by another run-time one)."""


def add(store: ScheduleStoreLogic, defn: ScheduleDef,
        first_fire: Callable[[ScheduleDef, datetime], datetime], replace: bool = False) -> str:
    """Store ``defn`` as a run-time schedule; returns created | revived | replaced.

    One transaction, under the same lock as the reconcile, so a worker starting at the
    same instant either sees the new row or runs before it is written.
    """
    from .schedules import def_params

    with store._s_tx() as c:
        store._s_rows(c, "schedules_lock_all")
        now = store._s_now(c, None, None)
        row = store._s_one(c, "schedules_get", name=defn.name)
        params = def_params(defn)
        if row is None:
            store._s_rows(c, "schedules_insert", **params, next_fire_at=first_fire(defn, now))
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
            store._s_rows(c, "schedules_update_definition", **params, reset_cursor=reset,
                          next_fire_at=first_fire(defn, now) if reset else None)
            how = "replaced" if live else "revived"
        store._s_rows(c, "schedules_set_origin", name=defn.name, origin=RUNTIME)
    return how


def remove(store: ScheduleStoreLogic, name: str) -> None:
    """Mark a run-time schedule removed (its history is kept; adding it again revives it)."""
    from .schedules import UnknownScheduleError

    with store._s_tx() as c:
        store._s_rows(c, "schedules_lock_all")
        row = store._s_one(c, "schedules_get", name=name)
        if row is None or row["removed_at"] is not None:
            raise UnknownScheduleError(f"no run-time schedule named {name!r}")
        if row.get("origin", CODE) != RUNTIME:
            raise ConfigurationError(
                f"schedule {name!r} is declared in code: remove it from the code (the next "
                "worker start removes it), or pause it")
        store._s_rows(c, "schedules_mark_removed", name=name)
