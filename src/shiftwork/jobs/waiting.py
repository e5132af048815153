"""Waiting for jobs to finish: one listener per App, shared by every waiter in the process.

A waiter registers its job, then marks the job as watched (``Store.deps.watch_jobs``): from
then on the job's completion sends a wake-up on the "done" topic (NOTIFY on Postgres,
a commit seen through ``data_version`` on SQLite). One thread holds the one listener
(store/wakeups.py) and, on each wake-up, asks in one query which of all the awaited jobs
finished. A thousand waiters cost one listening connection and one query per wake-up.
"""

from __future__ import annotations

import asyncio
import logging
import threading

# Real time, not the runtime's clock: a caller's timeout bounds a real wait on an Event.
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from shiftwork.core.errors import JobCancelled, JobFailed, JobNotFoundError
from shiftwork.core.states import JobState
from shiftwork.jobs.sealing import open_error, open_value
from shiftwork.model.records import FinishedJob

if TYPE_CHECKING:
    from shiftwork.core.crypt import Keys
    from shiftwork.store.base import Store

log = logging.getLogger("shiftwork.waiting")

Deliver = Callable[[FinishedJob | int], None]  # an int: no job with that id
#: Seconds between checks when the listener cannot be opened (or a wake-up was missed).
FALLBACK_POLL = 1.0
READY_WAIT = 5.0  # the first waiter waits this long for the listener before polling
#: The payload of a stream append's wake-up on the finished-jobs channel (PostgreSQL;
#: store/postgres/streams.sql): it wakes stream readers, and asks for no finished jobs.
STREAM_WAKE = "stream"


class WorkflowTalk(Protocol):
    """How a handle talks to a running workflow (``app.workflows``, workflow/talk.py): a
    Protocol here, so the handle names nothing above the jobs."""

    def state(self, workflow_id: int) -> dict[str, Any]: ...

    def query(self, workflow_id: int, key: str, default: Any = None) -> Any: ...

    def update(self, workflow_id: int, name: str, payload: Any = None, *,
               timeout: float | None = 30.0) -> Any: ...

    async def update_async(self, workflow_id: int, name: str, payload: Any = None, *,
                           timeout: float | None = 30.0) -> Any: ...


class ResultWaiter:
    """Delivers finished jobs to the callbacks registered for them.

    Two threads, however many waiters: the listener (wake-ups, then one query for all
    awaited jobs) and the marker (marks newly awaited jobs watched, in batches). Waiters
    never touch the database themselves: on SQLite every thread would open its own file.
    """

    def __init__(self, store: Callable[[], Store],
                 keys: Callable[[], Keys | None] = lambda: None) -> None:
        self._store = store
        #: What opens sealed results (an encrypted task's): the App's keys.
        self.keys = keys
        self._lock = threading.Lock()
        self._waiting: dict[int, list[Deliver]] = {}
        self._to_mark: list[tuple[int, Deliver]] = []
        self._marks = threading.Condition(self._lock)
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self._ready = threading.Event()
        #: called at every wake-up on the "done" topic (and every fallback poll): the
        #: callers waiting on a workflow update re-read it then (workflow/talk.py)
        self._on_wake: list[Callable[[], None]] = []
        #: set by the App: what a handle's ``query``/``update`` go through
        self.talk: WorkflowTalk | None = None

    @property
    def started(self) -> bool:
        return self._ready.is_set() and bool(self._threads)

    def _start(self) -> None:
        with self._lock:
            if not self._threads or not all(t.is_alive() for t in self._threads):
                self._stop.clear()
                self._threads = [
                    threading.Thread(target=self._listen, daemon=True,
                                     name="shiftwork-result-listener"),
                    threading.Thread(target=self._mark, daemon=True,
                                     name="shiftwork-result-marker")]
                for t in self._threads:
                    t.start()
        self._ready.wait(READY_WAIT)

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            self._marks.notify_all()
            threads, self._threads = self._threads, []
        for t in threads:
            t.join(2.0)

    def watch(self, job_id: int, deliver: Deliver) -> Callable[[], None]:
        """Call ``deliver`` once when the job has finished (at once if it has): with the
        finished job, or with JobNotFoundError if there is no such job. Returns a function
        that withdraws the registration."""
        self._start()  # listening before the job is marked: no completion is missed
        with self._lock:
            self._waiting.setdefault(job_id, []).append(deliver)
            self._to_mark.append((job_id, deliver))
            self._marks.notify()
        return lambda: self._withdraw(job_id, deliver)

    def on_wake(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` at every wake-up of the shared listener (a finished job, a
        resolved update; on SQLite any commit) and every fallback poll. Returns a function
        that withdraws it."""
        self._start()
        with self._lock:
            self._on_wake.append(callback)

        def withdraw() -> None:
            with self._lock:
                if callback in self._on_wake:
                    self._on_wake.remove(callback)
        return withdraw

    def _woken(self) -> None:
        with self._lock:
            callbacks = list(self._on_wake)
        for callback in callbacks:
            try:
                callback()
            except Exception:  # one waiter's failure (a closed loop) is not the listener's
                log.exception("waking an update waiter failed")

    def store(self) -> Store:
        """The store this waiter reads (the App's)."""
        return self._store()

    def _withdraw(self, job_id: int, deliver: Deliver) -> None:
        with self._lock:
            callbacks = self._waiting.get(job_id)
            if callbacks and deliver in callbacks:
                callbacks.remove(deliver)
                if not callbacks:
                    del self._waiting[job_id]

    def _deliver(self, job: FinishedJob | int) -> None:
        """A finished job, or the id of a job that does not exist."""
        job_id = job if isinstance(job, int) else job.id
        with self._lock:
            callbacks = self._waiting.pop(job_id, [])
        for deliver in callbacks:
            try:
                deliver(job)
            except Exception:  # one waiter's failure is not the others'
                log.exception("delivering job %s to a waiter failed", job_id)

    def _mark(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                if not self._to_mark and not self._stop.is_set():
                    self._marks.wait(FALLBACK_POLL)
                batch, self._to_mark = self._to_mark, []
                idle = not batch and bool(self._waiting)
            if idle:  # a safety net for a wake-up that never came (a crash, a lost NOTIFY)
                try:
                    self._check()
                except Exception as exc:
                    log.warning("could not check finished jobs: %s", exc)
                continue
            if not batch:
                continue
            try:
                finished, missing = self._store().deps.watch_jobs(sorted({i for i, _ in batch}))
            except Exception as exc:
                log.warning("could not mark %d awaited jobs (%s); retrying", len(batch), exc)
                with self._lock:
                    self._to_mark = batch + self._to_mark
                self._stop.wait(FALLBACK_POLL)
                continue
            for job in finished:
                self._deliver(job)
            for job_id in missing:
                self._deliver(job_id)

    def _check(self) -> None:
        with self._lock:
            ids = list(self._waiting)
        if ids:
            for job in self._store().deps.finished(ids):
                self._deliver(job)

    def _listen(self) -> None:
        while not self._stop.is_set():
            try:
                listener = self._store().wakeups_listen("done")
            except Exception as exc:
                log.warning("cannot listen for finished jobs (%s); polling", exc)
                self._ready.set()
                self._poll_once()
                continue
            if listener is None:  # behind PgBouncer without a listen DSN: poll only
                self._ready.set()
                self._poll_once()
                continue
            try:
                with listener:
                    self._ready.set()
                    self._check()  # anything that finished while no one listened
                    for payload in listener.receive(self._stop):
                        self._woken()
                        if payload != STREAM_WAKE:  # a stream append finished no job
                            self._check()
            except Exception as exc:
                if not self._stop.is_set():
                    log.warning("finished-job listener lost (%s); listening again", exc)
                    self._poll_once()

    def _poll_once(self) -> None:
        self._stop.wait(FALLBACK_POLL)
        self._woken()
        try:
            self._check()
        except Exception as exc:
            log.warning("could not check finished jobs: %s", exc)


def outcome_of(job: FinishedJob | int, keys: Keys | None = None) -> object:
    """The value a waiter returns for a finished job, or the exception it raises (a
    sealed result this App cannot open: EncryptionKeyError)."""
    if isinstance(job, int):
        raise JobNotFoundError(f"no job with id {job} (never enqueued, or pruned)")
    if job.state is JobState.SUCCEEDED:
        return open_value(keys, job.result, f"result:{job.id}")
    job = job._replace(error=open_error(keys, job.error, job.id))
    if job.state is JobState.DEAD:
        raise JobFailed(job.id, job.error)
    raise JobCancelled(f"job {job.id} was cancelled"
                       + (f": {job.error.get('message')}" if job.error else ""))


def wait_result(waiter: ResultWaiter, job_id: int, timeout: float | None) -> object:
    """Block until the job finished; its result, or JobFailed / JobCancelled / TimeoutError."""
    got: list[FinishedJob | int] = []
    event = threading.Event()

    def deliver(job: FinishedJob | int) -> None:
        got.append(job)
        event.set()

    withdraw = waiter.watch(job_id, deliver)
    deadline = None if timeout is None else time.monotonic() + timeout
    if not event.wait(None if deadline is None else max(0.0, deadline - time.monotonic())):
        withdraw()
        if not got:
            raise TimeoutError(f"job {job_id} did not finish within {timeout} seconds")
    return outcome_of(got[0], waiter.keys())


async def wait_result_async(waiter: ResultWaiter, job_id: int, timeout: float | None
                            ) -> object:
    """:func:`wait_result` for asyncio: no thread is held while it waits."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[FinishedJob | int] = loop.create_future()

    def settle(job: FinishedJob | int) -> None:
        if not future.done():
            future.set_result(job)

    def deliver(job: FinishedJob | int) -> None:
        loop.call_soon_threadsafe(settle, job)

    if waiter.started:
        withdraw = waiter.watch(job_id, deliver)
    else:  # the first waiter waits for the listener to open: not on the event loop
        withdraw = await asyncio.to_thread(waiter.watch, job_id, deliver)
    try:
        job = await asyncio.wait_for(future, timeout)
    except TimeoutError:
        withdraw()
        raise TimeoutError(f"job {job_id} did not finish within {timeout} seconds") from None
    return outcome_of(job, waiter.keys())
