"""Replay checking: each durable call must match the history at its place.

Each call (step, sleep, wait, patch marker) takes the next position in the body. A
recorded call keeps its name, kind, position and a digest of its arguments; a replay
that calls something else at that place raises :class:`NonDeterminismError`, which stops
the workflow (not retried) with its history untouched until the code is fixed.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from shiftwork.model.records import StepRecord
from shiftwork.workflow.errors import NonDeterminismError

#: Kinds that are part of the body's sequence (compensations are not: they run after it).
SEQUENCED = frozenset({"step", "sleep", "wait", "patch", "child", "parallel", "update",
                       "stream"})


def _type_name(value: Any) -> str:
    # Values that are not JSON (a client, the Workflow itself) are compared by type: their
    # repr may hold a memory address, which differs on every replay.
    return f"<{type(value).__qualname__}>"


def digest(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    text = json.dumps([list(args), kwargs], sort_keys=True, default=_type_name)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def describe(kind: str, name: str, digest_: str | None) -> str:
    return f"{kind} {name!r}" + (f" (arguments {digest_})" if digest_ else "")


class Replay:
    """The history of one workflow instance, consumed call by call."""

    def __init__(self, workflow_id: int, history: dict[str, StepRecord]) -> None:
        self.workflow_id = workflow_id
        self.history = history
        self.by_position = {r.position: r for r in history.values()
                            if r.position is not None and r.kind in SEQUENCED}
        self.position = 0
        self.consumed: set[str] = set()
        #: the first position past every recorded call: below it, the body is replaying
        self.end = max(self.by_position, default=-1) + 1

    def match(self, name: str, kind: str, digest_: str | None) -> StepRecord | None:
        """The record of the call at the current position, checked; None at the frontier."""
        pos = self.position
        rec = self.history.get(name)
        if rec is not None:
            if rec.position is not None and (rec.position != pos or rec.kind != kind or (
                    digest_ is not None and rec.digest is not None and rec.digest != digest_)):
                self._diverged(pos, rec, kind, name, digest_)
            self.consumed.add(name)
        else:
            other = self.by_position.get(pos)
            if other is not None:
                self._diverged(pos, other, kind, name, digest_)
        self.position += 1
        return rec

    def passed(self) -> bool:
        """Whether the history already holds another call at the current position."""
        return self.position in self.by_position

    def check_complete(self) -> None:
        """The body returned: every recorded call must have been made again."""
        left = sorted((r for r in self.by_position.values() if r.name not in self.consumed),
                      key=lambda r: r.position or 0)
        if left:
            r = left[0]
            raise NonDeterminismError(
                f"workflow {self.workflow_id}: non-deterministic replay: the history records "
                f"{describe(r.kind, r.name, r.digest)} at position {r.position}, but the code "
                "returned without calling it (a step was removed?). Restore it, or guard the "
                "change with wf.patched(...); then retry the job")

    def _diverged(self, pos: int, rec: StepRecord, kind: str, name: str,
                  digest_: str | None) -> None:
        raise NonDeterminismError(
            f"workflow {self.workflow_id}: non-deterministic replay at {kind} {name!r}: the "
            f"history records {describe(rec.kind, rec.name, rec.digest)} at position "
            f"{rec.position}, the code now calls {describe(kind, name, digest_)} at position "
            f"{pos}. A step was inserted, removed, renamed or called with other arguments; "
            "guard the change with wf.patched(...) (docs/workflows.md, Versioning) and retry "
            "the job")
