"""The wake-up seam: how a worker learns, without polling the jobs table, that work arrived.

Each engine provides ``Store.wakeups_listen()``, which opens a :class:`WakeListener`
(LISTEN/NOTIFY on PostgreSQL, ``PRAGMA data_version`` on SQLite). The worker's notifier
owns the retrying: a listener that cannot open, or breaks, is opened again. Either way a
missed wake-up only costs latency: producers also poll.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from types import TracebackType
from typing import Protocol, Self

#: The payload that means "any queue may have work" (also sent after a reconnect).
ANY_QUEUE = "*"


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
