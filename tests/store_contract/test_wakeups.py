"""Wake-ups: a listener hears another connection's enqueue, and ends when told to stop."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

from shiftwork import FakeClock, JobState
from shiftwork.store.base import Store
from shiftwork.store.wakeups import parse_wakeup

from .helpers import claim_one, done, insert


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



def test_a_snooze_woken_while_it_ran_wakes_its_queue(store: Store, other: Store,
                                                     clock: FakeClock) -> None:
    """An event or an update sent while a workflow runs makes its snooze due at once:
    its queue hears it then, not at its workers' next poll (issue 32: an update sent just
    after the previous one's result waited a whole poll interval on PostgreSQL)."""
    [job_id] = insert(store, queue="q")
    job = claim_one(store)
    other.workflows.event_send(job_id, "go", "1")  # while it runs: wake requested
    heard: list[str] = []
    stop = threading.Event()
    opened = store.wakeups_listen()
    assert opened is not None
    with opened as listener:
        def listen() -> None:
            for queue in listener.receive(stop):
                heard.append(queue)
                stop.set()

        thread = threading.Thread(target=listen, daemon=True)
        thread.start()
        time.sleep(0.1)  # listening before the completion (not a timed assertion)
        later = clock.now() + timedelta(hours=1)
        other.jobs.complete_many([done(job, JobState.SCHEDULED, run_at=later)])
        thread.join(5)
        stop.set()
        thread.join(2)
    assert heard and parse_wakeup(heard[0])[0] in ("q", "*")
    assert store.jobs.get(job_id).run_at <= clock.now()  # due at once
