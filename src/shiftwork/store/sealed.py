"""The rows of sealed payloads, for a key rotation (``store.sealed``), written once.

A rotation reads the jobs a page at a time in id order (``jobs_sealed_page``: the
primary key's walk, so each page costs the same however large the table) and writes
back each value it resealed (``jobs_reseal``). The write changes a column only while it
still holds the value the page read: a worker that wrote a newer checkpoint or error
meanwhile keeps it, and the next rotation reseals that one.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from shiftwork.store.core import EngineCore

#: The columns a rotation rewrites, in the order the page returns them after id, task.
SEALED_COLUMNS = ("args", "result", "checkpoint", "progress", "errors")


class SealedRow(NamedTuple):
    """One job's payload columns as stored (JSON text; None for SQL NULL)."""

    id: int
    task: str
    values: dict[str, str | None]


class SealedRows:
    """``store.sealed``: pages of payload columns and their guarded rewrite."""

    def __init__(self, core: EngineCore) -> None:
        self._core = core

    def page(self, after: int, limit: int) -> list[SealedRow]:
        """Up to ``limit`` jobs with an id above ``after``, in id order."""
        with self._core._reader() as c:
            rows = self._core._rows(c, "jobs_sealed_page", after=after, limit=limit)
        return [SealedRow(r[0], r[1], dict(zip(SEALED_COLUMNS, r[2:], strict=True)))
                for r in rows]

    def reseal(self, changes: list[tuple[int, dict[str, tuple[str | None, str]]]]) -> int:
        """Write each job's new column values, ``{column: (old text, new text)}``, in one
        transaction; a column that no longer holds its old text is left as it is.
        Returns the number of jobs written to."""
        written = 0
        with self._core.transaction() as c:
            for job_id, columns in changes:
                params: dict[str, Any] = {"id": job_id}
                for name in SEALED_COLUMNS:
                    old, new = columns.get(name, (None, None))
                    params[f"old_{name}"], params[f"new_{name}"] = old, new
                written += len(self._core._rows(c, "jobs_reseal", **params))
        return written
