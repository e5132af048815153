"""Wake-ups: a listener hears another connection's enqueue, and ends when told to stop."""

from __future__ import annotations

import threading
import time

from shiftwork.store.base import Store
from shiftwork.store.wakeups import parse_wakeup

from .helpers import insert


def _first_wakeup(store: Store, other: Store, *, enqueue: bool) -> list[str]:
    heard: list[str] = []
    stop = threading.Event()
    opened = store.wakeups_listen()
    assert opened is not None  # None only behind PgBouncer without a listen DSN
    with opened as listener:
        def listen() -> None:
            for queue in listener.receive(stop):
                heard.append(queue)
                stop.set()

        thread = threading.Thread(target=listen, daemon=True)
        thread.start()
        if enqueue:
            insert(other, queue="q")
        thread.join(5 if enqueue else 0.3)
        stop.set()
        thread.join(2)
        assert not thread.is_alive(), "receive() did not end after stop was set"
    return heard


def test_an_enqueue_elsewhere_wakes_the_listener(store: Store, other: Store) -> None:
    started = time.monotonic()
    heard = _first_wakeup(store, other, enqueue=True)
    assert heard
    # The queue and how many jobs are due (one wake-up per job: worker/wake_share.py), or
    # "any" where the engine can't say.
    queue, count, _ = parse_wakeup(heard[0])
    assert queue in ("q", "*")
    assert count in (1, None) if queue == "q" else count is None
    assert time.monotonic() - started < 3


def test_no_wakeup_without_a_commit(store: Store, other: Store) -> None:
    assert _first_wakeup(store, other, enqueue=False) == []

