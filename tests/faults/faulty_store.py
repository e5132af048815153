"""Faults at the storage seam: a store that fails chosen calls, on either engine.

``FaultyStore`` stands in front of a real store. ``fail("jobs.claim", times=2)`` makes the
next two claims raise :class:`StorageError` without touching the database;
``lose_reply("jobs.complete_many")`` lets the next one run and commit, then raises
:class:`CommitUnknownError`, as a lost reply would on PostgreSQL (and as SQLite cannot
show otherwise). A plan is named by the call: ``"jobs.<method>"`` for the jobs driver
(``store.jobs``), a plain name for the store's own methods. Everything else passes
straight through.

A claim reaches the database through the store's claim statements (``store.claims``,
chosen by flow/claiming.py): their wrapper here answers to the plan named ``jobs.claim``
too, for a one-statement claim and for a limited claim's transaction alike.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
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
        area, _, name = method.rpartition(".")
        getattr(getattr(self._inner, area) if area else self._inner, name)  # a typo fails here
        with self._lock:
            self._plans[method] = plan
        return plan

    def _take(self, name: str) -> _Plan | None:
        """The plan of ``name`` if it fires on this call (counting the call)."""
        with self._lock:
            plan = self._plans.get(name)
            fire = plan is not None and plan.raised < plan.times
            if plan is not None:
                plan.calls += 1
                if fire:
                    plan.raised += 1
        return plan if fire else None

    def _wrap(self, name: str, real: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            plan = self._take(name)
            if plan is None:
                return real(*args, **kwargs)
            if plan.after:
                real(*args, **kwargs)
                raise CommitUnknownError(f"injected: the reply of {name} was lost")
            raise StorageError(f"injected: {name} failed")

        return call

    @property
    def claims(self) -> _FaultyClaims:
        return _FaultyClaims(self, self._inner.claims)

    @property
    def jobs(self) -> _FaultyJobs:
        return _FaultyJobs(self, self._inner.jobs)

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._inner, name)
        if not callable(real) or name.startswith("_"):
            return real
        return self._wrap(name, real)


class _FaultyJobs:
    """The store's jobs driver, each method under the plan ``"jobs.<method>"``."""

    def __init__(self, faults: FaultyStore, inner: Any) -> None:
        self._faults, self._inner = faults, inner

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._inner, name)
        if not callable(real) or name.startswith("_"):
            return real
        return self._faults._wrap(f"jobs.{name}", real)


class _FaultyClaims:
    """The store's claim statements, the ``jobs.claim`` plan applied to each claim."""

    def __init__(self, faults: FaultyStore, inner: Any) -> None:
        self._faults, self._inner = faults, inner
        self.in_one_statement = inner.in_one_statement
        self.claim = faults._wrap("jobs.claim", inner.claim)

    @contextmanager
    def begin(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        plan = self._faults._take("jobs.claim")
        if plan is not None and not plan.after:
            raise StorageError("injected: jobs.claim failed")
        with self._inner.begin(*args, **kwargs) as tx:
            yield tx
        if plan is not None:  # committed: the reply is lost
            raise CommitUnknownError("injected: the reply of jobs.claim was lost")


def inject_faults(app: App) -> FaultyStore:
    """Put a :class:`FaultyStore` in front of ``app``'s store (the storage seam)."""
    faulty = FaultyStore(app.store)
    app.runtime._store = faulty
    return faulty

