"""Bulk actions by filter: retry, cancel or delete every job a ``JobFilter`` matches.

Done in batches of ``BATCH`` ids (keyset by id), each its own short transaction, so a
million matches neither lock the table nor hold one long transaction; workers claim and
finish jobs between batches. Every bulk action is audited: a ``jobs.bulk`` event (the
log) and a row of ``bulk_actions`` (the dashboard), saying who, when, the filter and how
many.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from shiftwork.core.states import FINAL, JobState
from shiftwork.model.filter import FINISHED_STATES, FilterError, JobFilter

if TYPE_CHECKING:
    from shiftwork.core.events import EventBus
    from shiftwork.store.base import Store


class BulkHost(Protocol):
    """What a bulk action needs of its App: the store, the events, and the one cancel path."""

    @property
    def store(self) -> Store: ...

    @property
    def events(self) -> EventBus: ...

    def cancel_jobs(self, job_ids: list[int]) -> int: ...

ACTIONS = ("retry", "cancel", "delete")
BATCH = 1000
#: Audit rows kept (the newest); older ones are pruned as new ones are written.
AUDIT_KEEP = 1000


@dataclass(frozen=True)
class BulkResult:
    action: str
    filter: JobFilter
    matched: int  # jobs the filter matched when their batch was read
    done: int  # of those, how many the action moved (or deleted)


def bulk_filter(action: str, f: JobFilter) -> JobFilter:
    """The filter ``action`` runs on, or a ``FilterError``: an action needs a filter (an
    empty one would mean every job), and delete takes finished jobs only."""
    if action not in ACTIONS:
        raise FilterError(f"unknown bulk action {action!r}: use one of {', '.join(ACTIONS)}")
    if f.empty:
        raise FilterError(f"a bulk {action} needs a filter (state, queue, task, error, ...): "
                          "an empty one would match every job")
    if action == "delete":
        live = [s.value for s in f.states if s not in FINISHED_STATES]
        if live:
            raise FilterError(f"delete is for finished jobs only (succeeded, dead, "
                              f"cancelled), not {', '.join(live)}: cancel those first")
        if not f.states:
            f = replace(f, states=FINISHED_STATES)
    if action == "cancel":
        final = [s.value for s in f.states if s in FINAL]
        if final:
            raise FilterError(f"cancel is for waiting and running jobs, not "
                              f"{', '.join(final)} ones: they have finished")
        if not f.states:
            f = replace(f, states=tuple(s for s in JobState if s not in FINAL))
    return f


def bulk_apply(app: BulkHost, action: str, f: JobFilter, who: str, batch: int = BATCH,
               progress: Callable[[int, int], None] | None = None) -> BulkResult:
    """Run ``action`` on every job ``f`` matches, ``batch`` at a time; audited as ``who``.
    ``progress(matched, done)`` is called after each batch."""
    f = bulk_filter(action, f)
    store = app.store
    matched = done = 0
    after: int | None = None
    while True:
        ids = store.console.match_ids(f, after, batch)
        if not ids:
            break
        after = ids[-1]
        matched += len(ids)
        if action == "retry":
            done += len(store.console.retry_batch(ids))
        elif action == "delete":
            done += len(store.console.delete_finished(ids))
        else:
            done += app.cancel_jobs(ids)
        if progress is not None:
            progress(matched, done)
        if len(ids) < batch:
            break
    text = f.describe()
    store.console.bulk_actions_add(who, action, text, matched, done)
    store.console.bulk_actions_prune(AUDIT_KEEP)
    app.events.emit("jobs.bulk", action=action, who=who, filter=text, matched=matched,
                    done=done)
    return BulkResult(action, f, matched, done)
