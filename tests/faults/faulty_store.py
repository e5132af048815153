"""Faults at the storage seam: a store that fails chosen calls, on either engine.

``FaultyStore`` stands in front of a real store. ``fail("jobs_claim", times=2)`` makes the
next two claims raise :class:`StorageError` without touching the database;
``lose_reply("jobs_complete_many")`` lets the next one run and commit, then raises
:class:`CommitUnknownError`, as a lost reply would on PostgreSQL (and as SQLite cannot
show otherwise). Everything else passes straight through.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from shiftwork import App, CommitUnknownError, StorageError
from shiftwork.store.base import Store


@dataclass
class _Plan:
    times: int
    after: bool  # run the real call first (it commits), then raise
    calls: int = 0
    raised: int = 0


class FaultyStore:
    def __init__(self, inner: Store) -> None:
        self._inner = inner
        self._plans: dict[str, _Plan] = {}
        self._lock = threading.Lock()

    def fail(self, method: str, times: int = 1) -> _Plan:
        """The next ``times`` calls of ``method`` raise before reaching the database."""
        return self._plan(method, _Plan(times, after=False))

    def lose_reply(self, method: str, times: int = 1) -> _Plan:
        """The next ``times`` calls of ``method`` commit, then raise as if the reply was lost."""
        return self._plan(method, _Plan(times, after=True))

    def _plan(self, method: str, plan: _Plan) -> _Plan:
        getattr(self._inner, method)  # a typo in a test fails here, not silently
        with self._lock:
            self._plans[method] = plan
        return plan

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._inner, name)
        if not callable(real) or name.startswith("_"):
            return real

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                plan = self._plans.get(name)
                fire = plan is not None and plan.raised < plan.times
                if plan is not None:
                    plan.calls += 1
                    if fire:
                        plan.raised += 1
            if not fire:
                return real(*args, **kwargs)
            assert plan is not None
            if plan.after:
                real(*args, **kwargs)
                raise CommitUnknownError(f"injected: the reply of {name} was lost")
            raise StorageError(f"injected: {name} failed")

        return call


def inject_faults(app: App) -> FaultyStore:
    """Put a :class:`FaultyStore` in front of ``app``'s store (the storage seam)."""
    faulty = FaultyStore(app.store)
    app.runtime._store = faulty  # type: ignore[assignment]
    return faulty

