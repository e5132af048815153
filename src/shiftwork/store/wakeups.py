"""The wake-up seam: how a worker learns, without polling the jobs table, that work arrived.

Each engine provides ``Store.wakeups_listen()``, which opens a :class:`WakeListener`
(LISTEN/NOTIFY on PostgreSQL, ``PRAGMA data_version`` on SQLite). The worker's notifier
owns the retrying: a listener that cannot open, or breaks, is opened again. Either way a
missed wake-up only costs latency: producers also poll.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterable, Iterator
from types import TracebackType
from typing import Protocol, Self

from shiftwork.model.new_job import NewJob

#: The payload that means "any queue may have work" (also sent after a reconnect).
ANY_QUEUE = "*"

#: Separates a wake-up's queue, job count and token (no queue name contains it).
_SEP = "|"


def shared_wakeups(counts: Iterable[tuple[str, int]]) -> list[str]:
    """Payloads for jobs just made due: ``queue|count|token`` per queue.

    Of the N processes serving the queue, only the ``count`` whose rank follows ``token``
    claim (worker/wake_share.py): one wake-up per job, not one per process. The token is
    random so the wake-ups spread over the fleet.
    """
    return [f"{queue}{_SEP}{count}{_SEP}{random.getrandbits(31)}" for queue, count in counts]


def due_counts(jobs: Iterable[NewJob]) -> list[tuple[str, int]]:
    """How many of ``jobs`` are due now, per queue (their wake-ups name the count)."""
    counts: dict[str, int] = {}
    for j in jobs:
        if j.run_at is None:
            counts[j.queue] = counts.get(j.queue, 0) + 1
    return sorted(counts.items())


def due_wakeups(jobs: Iterable[NewJob]) -> list[str]:
    """The wake-ups an insert of ``jobs`` sends, sync or async: one share per due job."""
    return shared_wakeups(due_counts(jobs))


def due_wakeup(job: NewJob) -> str | None:
    """:func:`due_wakeups` of one job (None: not due yet, nothing to wake)."""
    return shared_wakeups([(job.queue, 1)])[0] if job.run_at is None else None


def parse_wakeup(payload: str) -> tuple[str, int | None, int]:
    """(queue, job count or None for "every process", token) of a payload; a bare queue
    name (or ``"*"``) wakes every process serving it."""
    parts = payload.split(_SEP)
    if len(parts) != 3:
        return payload, None, 0
    try:
        return parts[0], int(parts[1]), int(parts[2])
    except ValueError:
        return parts[0], None, 0


class WakeListener(Protocol):
    """An open subscription to wake-ups; close it (or use ``with``) when done."""

    def receive(self, stop: threading.Event) -> Iterator[str]:
        """Yield the queue named by each wake-up (or ``"*"``) as it arrives, until ``stop``
        is set. Raises when the subscription breaks (open a new one then)."""

    def close(self) -> None: ...

    def __enter__(self) -> WakeListener: ...

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None: ...


class ClosingListener:
    """The ``with`` support both engines' listeners share: leaving the block closes it."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
