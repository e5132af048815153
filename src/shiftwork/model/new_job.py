"""A job about to be inserted, as enqueue builds it (what the store returns: records.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple

#: The run_at of a job waiting for the jobs it runs after: it waits as 'scheduled', so
#: the claim never sees it; the completion of its last parent makes it available.
DEPS_WAIT = datetime(9999, 12, 31, tzinfo=UTC)
#: A job's meta names its key here when the unique_keys table holds it (Dedup): the row's
#: unique_key column is then NULL, being the partial unique index's.
DEDUP_META_KEY = "shiftwork.unique_key"


class Dedup(NamedTuple):
    """A unique key held by the ``unique_keys`` table rather than the jobs' partial unique
    index (jobs/dedup.py builds it, docs/concepts.md says what each mode means)."""

    key: str
    hold_for: float | None = None  # unique_for: seconds from the enqueue; None: no limit
    states: tuple[str, ...] | None = None  # the holder's states that hold it; None: any
    debounce: float | None = None  # seconds: a waiting holder takes the new arguments


@dataclass(slots=True)  # not frozen: a frozen dataclass costs 5x as much to build (bulk enqueue)
class NewJob:
    """A job about to be inserted: arguments already validated and encoded."""

    task: str
    queue: str
    args_json: str
    priority: int = 0
    max_attempts: int = 20
    run_at: datetime | None = None  # None: due now (database time)
    unique_key: str | None = None
    timeout: float | None = None
    meta_json: str = "{}"
    after: tuple[int, ...] = ()  # ids of existing jobs it runs after
    after_new: tuple[int, ...] = ()  # positions of earlier jobs in the same insert
    on_failure: str = "cancel"  # after a parent dies or is cancelled: "cancel" or "run"
    dedup: Dedup | None = None  # a key of the unique_keys table (unique_key is then None)


class Mark(NamedTuple):
    """What a job of a graph is written with besides its row (composition/settling.py
    decides, the store writes it)."""

    deps_pending: int = 0  # how many jobs (a group: one) it waits for
    watched: bool = False  # a job of the same insert waits for it
    group_id: int | None = None  # the group it is a member of


NO_MARK = Mark()
