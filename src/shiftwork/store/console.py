"""The operations console's store methods, written once: the filtered jobs list, its
bounded count, the batches of a bulk action and their audit.

Each engine keeps the SQL (``jobs_console.sql``: one fragment per filter field) and runs
it (``_read``); the ``{filter}`` of a query is the AND of the fragments of the fields a
filter sets (``where``), so each statement names only its own conditions: no
``:x IS NULL OR`` that keeps SQLite from an index or PostgreSQL from a partial one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from shiftwork.model.filter import JobFilter, check_sort, like_pattern
from shiftwork.model.records import BulkAction, CancelledBatch, Job
from shiftwork.store.core import EngineCore
from shiftwork.store.deps import Cascade
from shiftwork.store.rows import from_ts
from shiftwork.store.wakeups import ANY_QUEUE

#: Query texts kept per store, one per filter shape (the rest are made each time).
_SHAPES = 256
FIELDS = ("states", "queue", "task", "error", "created_from", "created_to", "finished_from",
          "finished_to", "unique_key", "id", "tag")


def fragment(queries: dict[str, str], name: str) -> str:
    """A named fragment without its comment lines (it is joined into one line's text)."""
    lines = [line for line in queries[name].splitlines() if not line.strip().startswith("--")]
    return "(" + "\n".join(lines).strip() + ")"


def where(queries: dict[str, str], params: dict[str, Any], keyset: str | None = None) -> str:
    """The conditions of the fields ``params`` sets, and ``keyset``'s fragment (the rows
    after ``params["after"]`` in that order)."""
    parts = [fragment(queries, f"jobs_filter_{name}") for name in FIELDS
             if params.get(name) is not None]
    if keyset is not None and params.get("after") is not None:
        parts.append(fragment(queries, f"jobs_after_{keyset}"))
    return "\n  AND ".join(parts) or "1 = 1"


class JobsConsole:
    """The console's statements (``store.console``), on the engine store's sessions."""

    def __init__(self, core: EngineCore, cascade: Cascade) -> None:
        self._core = core  # the engine's store: sessions, queries, reads
        self._cascade = cascade  # a cancel resolves the cancelled jobs' dependents
        self.q = core.q
        self._session = core._session
        self._rows = core._rows
        self._notify = core._notify
        #: Rows of a query's text (as ``Job`` with ``jobs``), outside any write transaction.
        self._read: Callable[..., list[Any]] = core._read
        self._unique_violation = core._unique_violation
        self.engine = core.engine

    def _filtered(self, query: str, f: JobFilter, keyset: str | None = None,
                  **params: Any) -> tuple[str, dict[str, Any]]:
        """The text of the named ``query`` made for ``f``, and its parameters. Texts are
        kept per shape (which fields, which states), at most ``_SHAPES`` of them."""
        values = {**self._filter_params(f), **params}
        shape = tuple(n for n in (*FIELDS, "after") if values.get(n) is not None)
        states = ", ".join(f"'{s.value}'" for s in f.states)  # enum values, never input
        key = (query, shape, keyset, states)
        made = self.__dict__.setdefault("_console_sql", {})
        text = made.get(key)
        if text is None:
            text = self.q[query].replace("{filter}", where(self.q, values, keyset))
            text = text.replace("{states}", states)
            if len(made) < _SHAPES:
                made[key] = text
        return text, values

    def _filter_params(self, f: JobFilter) -> dict[str, Any]:
        sqlite = self.engine == "sqlite"

        def when(value: datetime | None) -> Any:
            return value.timestamp() if sqlite and value is not None else value

        return {"states": True if f.states else None,  # literals in the text (_filtered)
                "queue": f.queue, "task": like_pattern(f.task), "error": like_pattern(f.error),
                "created_from": when(f.created_from), "created_to": when(f.created_to),
                "finished_from": when(f.finished_from), "finished_to": when(f.finished_to),
                "unique_key": f.unique_key, "id": f.id, "tag": f.tag}

    def page(self, f: JobFilter, sort: str = "created", after: int | None = None,
             limit: int = 50) -> list[Job]:
        """One page of the jobs ``f`` matches, newest first by ``sort`` (created, run_at,
        finished), after job ``after`` (the previous page's last): keyset paging."""
        sort = check_sort(sort)
        name, values = self._filtered(f"jobs_page_{sort}", f, sort, after=after, limit=limit)
        return self._read(name, values, jobs=True)

    def count_upto(self, f: JobFilter, cap: int) -> int:
        """How many jobs ``f`` matches, counted up to ``cap`` (``cap`` means "at least")."""
        rows = self._read(*self._filtered("jobs_count_upto", f, cap=cap))
        return int(rows[0][0]) if rows else 0

    def match_ids(self, f: JobFilter, after: int | None, limit: int) -> list[int]:
        """The next ``limit`` ids ``f`` matches after ``after``, in id order."""
        name, values = self._filtered("jobs_match_ids", f, "ids", after=after, limit=limit)
        return [int(r[0]) for r in self._read(name, values)]

    def retry_batch(self, ids: Sequence[int]) -> list[int]:
        """``jobs.retry`` for many ids in one statement; the ids it moved. A job whose
        unique key a live job now holds cannot move, and fails the whole statement: the
        batch is then retried one by one, and those stay where they are."""
        if not ids:
            return []
        try:
            with self._session() as c:
                moved = [int(r[0]) for r in self._rows(c, "jobs_retry_batch", ids=list(ids))]
                if moved:
                    self._notify(c, [ANY_QUEUE])
            return sorted(moved)
        except self._unique_violation:
            pass
        moved = []
        for job_id in ids:
            try:
                with self._session() as c:
                    if self._rows(c, "jobs_retry_batch", ids=[job_id]):
                        moved.append(job_id)
                        self._notify(c, [ANY_QUEUE])
            except self._unique_violation:
                continue
        return moved

    def cancel_batch(self, ids: Sequence[int]) -> CancelledBatch:
        """``jobs.cancel`` (and ``workflows.cancel``) for many ids in one transaction of
        three statements: started workflows woken to cancel themselves, waiting jobs
        cancelled (their dependents resolved), running ones asked to stop."""
        if not ids:
            return CancelledBatch([], [])
        ids = list(ids)
        with self._session() as c:
            woken = {int(r[0]) for r in self._rows(c, "jobs_cancel_batch_workflows", ids=ids)}
            cancelled = [(int(r[0]), _meta(r[1]))
                         for r in self._rows(c, "jobs_cancel_batch_waiting", ids=ids)]
            if cancelled:
                self._cascade.resolve(c, [i for i, _ in cancelled])
            asked = woken | {int(r[0]) for r in self._rows(c, "jobs_cancel_batch_running",
                                                           ids=ids)}
            if woken:
                self._notify(c, [ANY_QUEUE])
        return CancelledBatch(sorted(cancelled), sorted(asked))

    def delete_finished(self, ids: Sequence[int]) -> list[int]:
        """Delete the finished (succeeded, dead, cancelled) jobs among ``ids``."""
        if not ids:
            return []
        with self._session() as c:
            return sorted(int(r[0]) for r in self._rows(c, "jobs_delete_finished",
                                                         ids=list(ids)))

    def bulk_actions_add(self, who: str, action: str, filter_text: str, matched: int,
                         done: int) -> None:
        with self._session() as c:
            self._rows(c, "bulk_actions_add", who=who, action=action, filter=filter_text,
                       matched=matched, done=done)

    def bulk_actions_list(self, limit: int = 20) -> list[BulkAction]:
        rows = self._read(self.q["bulk_actions_list"], {"limit": limit})
        return [BulkAction(_when(r[0]), r[1], r[2], r[3], int(r[4]), int(r[5])) for r in rows]

    def bulk_actions_prune(self, keep: int) -> None:
        with self._session() as c:
            self._rows(c, "bulk_actions_prune", keep=keep)


def _meta(value: Any) -> dict[str, Any]:
    """A meta column as read (jsonb on PostgreSQL, text on SQLite)."""
    if isinstance(value, str):
        value = json.loads(value)
    return value if isinstance(value, dict) else {}


def _when(value: Any) -> datetime:
    if isinstance(value, datetime):
        from shiftwork.store.rows import aware

        return aware(value)  # type: ignore[return-value]
    when = from_ts(value)
    assert when is not None
    return when
