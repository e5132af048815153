"""A test hook at every durable write of the workflow path (the crash-point tests use it).

The hook is called with the workflow id and a label ``"before:<name>:<status>"`` or
``"after:<name>:<status>"`` around each write: a step (``a:done``), a sleep
(``nap:sleeping``), an event taken (``event:go:take``), a compensation
(``compensate:a:done``), the decision to compensate (``decide:compensating``) and the
final status (``finish:succeeded``). Production code never sets it.
"""

from __future__ import annotations

from collections.abc import Callable

BoundaryHook = Callable[[int, str], None]

_hook: BoundaryHook | None = None


def set_boundary_hook(hook: BoundaryHook | None) -> None:
    global _hook
    _hook = hook


def boundary(workflow_id: int, label: str) -> None:
    if _hook is not None:
        _hook(workflow_id, label)
