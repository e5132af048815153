"""Which queues exist: declared in code, or seen in the table; and the warning for a
name that is neither (a typo in ``-q emials`` or ``enqueue --queue``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shiftwork.core.names import did_you_mean

if TYPE_CHECKING:
    from shiftwork.registry import Registry
    from shiftwork.store.base import Store


def known_queues(registry: Registry, store: Store) -> set[str]:
    """Queues declared in code or seen in the table (jobs waiting, running, held or dead;
    paused queues). Reads no finished history."""
    known = registry.declared_queues()
    known |= {s.queue for s in store.jobs.queues_stats(include_finished=False)}
    return known | store.long_jobs.queues_paused()


def unknown_queue_warning(registry: Registry, store: Store, queue: str) -> str | None:
    """A warning naming the known queues when ``queue`` is none of them (a typo?)."""
    known = sorted(known_queues(registry, store))
    if queue in known:
        return None
    return (f"queue {queue!r} is not known: no task declares it and no job is in it"
            f"{did_you_mean(queue, known)} (known queues: {', '.join(known) or 'none'})")
