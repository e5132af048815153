"""The options of an App's tasks, written where SQL producers read them.

The SQL enqueue function (PostgreSQL, migration 0029) cannot see a task's Python options
(queue, priority, max_attempts, timeout), so the Apps that migrate and the workers that
start write them to ``task_defaults``. SQLite has no server-side function: nothing to do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shiftwork.model.records import TaskDefaults
from shiftwork.store.core import EngineCore

if TYPE_CHECKING:
    from shiftwork.store.base import Store


def publish_task_defaults(store: Store, tasks: list[TaskDefaults]) -> None:
    """Upsert ``tasks``' rows (PostgreSQL; a no-op on SQLite or with no tasks). Pass
    them sorted by name (``Registry.task_defaults``): workers starting together then lock
    the rows in one order, and never deadlock."""
    if store.engine != "postgres" or not tasks or not isinstance(store, EngineCore):
        return
    with store._session() as c:  # the engine primitive fleet.py uses
        store._one(c, "task_defaults_upsert",
                   names=[t.name for t in tasks], queues=[t.queue for t in tasks],
                   priorities=[t.priority for t in tasks],
                   max_attempts=[t.max_attempts for t in tasks],
                   timeouts=[t.timeout for t in tasks])
