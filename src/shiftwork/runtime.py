"""The Runtime: what every service and helper below the App works with.

The store (opened at once, checked or migrated on first use), the settings, the clock,
the event bus and the :class:`~shiftwork.registry.Registry` of what the App declared.
The App builds one and is its public face; workers, the scheduler, the observers, the
workflow runner and the testing tools take the Runtime, never the App.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol

from shiftwork.core.clock import Clock
from shiftwork.core.crypt import Keys
from shiftwork.core.events import EventBus
from shiftwork.core.settings import Settings
from shiftwork.jobs.waiting import ResultWaiter
from shiftwork.registry import Registry
from shiftwork.store import Store, open_store
from shiftwork.store.connections import Connections
from shiftwork.store.schema_check import describe_database, require_migrated
from shiftwork.store.task_defaults import publish_task_defaults

log = logging.getLogger("shiftwork.migrate")


class Runtime:
    """One App's engine: store, settings, clock, events and registry."""

    def __init__(self, dsn: str, *, schema: str, clock: Clock, settings: Settings,
                 auto_migrate: bool, connections: Connections, async_pool_size: int,
                 keys: Keys | None = None) -> None:
        self.dsn = dsn
        self.schema = schema
        self.clock = clock
        self.settings = settings
        self.auto_migrate = auto_migrate
        self.connections = connections
        self.events = EventBus()
        #: The keys that seal encrypted tasks' payloads and open sealed ones (None: this
        #: App has none; sealed values read as "encrypted"), jobs/sealing.py.
        self.keys = keys
        self.registry = Registry()
        self.import_path: str | None = None  # "module:attr", set by the command line
        #: Set by a framework integration (shiftwork.contrib.django): the connection of
        #: the transaction the caller is inside now (None: none), which an enqueue without
        #: ``conn=`` joins; and how to run code once that transaction commits.
        self.ambient_transaction: Callable[[], Any] | None = None
        self.on_commit: Callable[[Callable[[], None]], None] | None = None
        self._store_lock = threading.Lock()
        self._store: Store = open_store(dsn, clock=clock, schema=schema,
                                        connections=connections,
                                        async_pool_size=async_pool_size)
        self._ready = False  # the schema was checked (or migrated) once
        #: Every job.result() waiter of this process shares its one listener (waiting.py).
        self.results = ResultWaiter(lambda: self.store, lambda: self.keys)

    @property
    def store(self) -> Store:
        """The storage engine. Its first use migrates when ``auto_migrate``, else checks
        that the schema is migrated (``NotMigratedError`` if not)."""
        if not self._ready:
            with self._store_lock:
                if not self._ready:
                    if self.auto_migrate:
                        self.migrate()
                    else:
                        require_migrated(self._store, self.schema)
                    self._ready = True
        return self._store

    @property
    def ready(self) -> bool:
        """The schema was checked (or migrated): using the store runs no first query."""
        return self._ready

    def migrate(self) -> list[int]:
        """Create or upgrade the tables; the migration numbers applied (logged at INFO)."""
        applied = self._store.migrate()
        self._ready = True
        # A trigger may enqueue before any worker has started: the tasks' options now.
        publish_task_defaults(self._store, self.registry.task_defaults())
        where = self.describe_database()
        if applied:
            log.info("%s: applied migrations %s", where, ", ".join(map(str, applied)))
        else:
            log.info("%s: schema is up to date", where)
        return applied

    def describe_database(self) -> str:
        return describe_database(self._store, self.schema)

    def connection_budget(self) -> int | None:
        return self._store.connection_budget()

    def close(self) -> None:
        self.results.close()
        self._store.close()

    async def aclose(self) -> None:
        await self._store.aclose()
        await asyncio.to_thread(self._store.close)


class HasRuntime(Protocol):
    """What holds a Runtime: the App people hold (the public testing tools take it, or
    the Runtime itself, without naming the App, which stands above them)."""

    @property
    def runtime(self) -> Runtime: ...


def runtime_of(owner: Runtime | HasRuntime) -> Runtime:
    """The Runtime of an App (the public testing tools take the App people hold), or
    ``owner`` itself when it is one."""
    return owner if isinstance(owner, Runtime) else owner.runtime
