"""One per queue: claims due jobs in batches for the queue's free slots.

Claiming ahead: a claim is a round trip and a durable commit, and while it is in
flight the pool keeps finishing jobs. When jobs are short, slots would sit empty
for the length of each claim, so the producer also claims the jobs the pool is
expected to finish during one claim (``concurrency x claim time / job time``, at
most two full claims, and two to eight per slot). Those wait in the process, counted as
in flight, and begin as slots free; for jobs longer than a claim this comes to nothing,
so a worker busy with slow jobs does not hold work another worker could start.

A claim that fails may still have committed (its reply was lost). Before claiming
again, the producer gives back whatever this worker is recorded as running in its queue
but does not hold: those jobs never reached it, so they return without spending an
attempt. (If the lost claim commits only after that, the heartbeat, which renews only
the jobs the worker holds, lets their lease run out and the rescuer brings them back.)
"""

from __future__ import annotations

import logging
import threading

# Real time, not the runtime's clock: claim lengths; idle() bounds a real wait.
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from shiftwork.core.backoff import Retrying
from shiftwork.core.errors import StorageError
from shiftwork.core.service import ThreadService, jittered
from shiftwork.flow.claiming import claim
from shiftwork.model.records import ClaimedJob
from shiftwork.worker.outage import OutageLog, outage_log

if TYPE_CHECKING:
    from shiftwork.runtime import Runtime

log = logging.getLogger("shiftwork.worker.producer")


class Producer(ThreadService):
    outage: OutageLog  # always this database's (not None, as a service's may be)

    def __init__(self, rt: Runtime, queue: str, concurrency: int, worker_id: str,
                 dispatch: Callable[[ClaimedJob], None],
                 held: Callable[[], list[tuple[int, int]]],
                 claimed: Callable[[str], None] | None = None) -> None:
        super().__init__()
        self.name = f"producer-{queue}"
        self.rt = rt
        self.queue = queue
        self.outage = outage_log(rt)  # says an outage in a few lines (worker/outage.py)
        self.concurrency = concurrency
        self.worker_id = worker_id
        self.dispatch = dispatch
        self.held = held  # the (job id, attempt) pairs the worker holds, all queues
        self.claimed = claimed  # told after a claim's jobs were dispatched (batch tasks)
        self.limits = rt.registry.concurrency_limits(queue)
        # What the claim gets: the limits, and a limit of 0 for each task met that this
        # worker does not register (replaced whole, never changed in place)
        self._claim_limits = dict(self.limits)
        self.flow = rt.registry.claim_flow(queue)  # rate buckets and group caps, if any
        # Once a limit stopped a claim, try again when the next token is due.
        token_in = self.flow.next_token_in()
        self._retry_in = (rt.settings.poll_interval if token_in is None
                          else min(rt.settings.poll_interval, max(token_in, 0.005)))
        self.in_flight = 0  # claimed and not finished: running, or waiting to begin
        self._job_seconds: float | None = None  # moving averages, for claiming ahead
        self._claim_seconds: float | None = None
        self.capacity = concurrency  # slots plus what is worth claiming ahead
        self._half = 0  # in flight when half the capacity is free
        self._plan_capacity()
        self._cond = threading.Condition()
        self._wake = threading.Event()

    # Stopping a producer stops its claims; running jobs are the worker's business.
    def interrupt(self) -> None:
        self._wake.set()
        with self._cond:
            self._cond.notify_all()

    def wake(self) -> None:
        self._wake.set()

    def slot_freed(self, duration: float | None = None) -> None:
        with self._cond:
            self.in_flight -= 1
            if duration is not None:
                self._job_seconds = _average(self._job_seconds, duration)
            # Wake the producer only when it has a reason to claim: the pool was full and
            # now has room, or half the slots are free (a claim worth its round trip), or
            # all are (idle() waits for that). A notify per job costs more than the job.
            if self.in_flight in (self.capacity - 1, self._half, 0):
                self._cond.notify_all()
        if self.limits or self.flow.group_caps:  # room under a fleet-wide cap may have opened
            self._wake.set()

    def _plan_capacity(self) -> None:
        """Slots plus the jobs the pool should finish while one claim is in flight: at
        most two full claims (``claim_batch``), and between two and eight per slot. With
        jobs much shorter than a claim, the pool must not run dry while a claim is in
        flight, and each claim should be a full one: at 50 slots, two per slot (150 in
        flight) left each claim 75-150 jobs and the pool idle at its end; two full claims
        (450) keep it fed. No-op drains of 100,000 jobs measured alternately, 4 rounds:
        1 process 16,360 -> 20,850 jobs/s, 2 processes 24,260 -> 26,670. Eight per slot
        at most: a queue of few slots does not hoard a fleet's short jobs. Jobs longer
        than a claim are claimed ahead as before (``concurrency x claim / job``), so a
        worker busy with slow jobs still does not hold work another could start."""
        ahead = 0
        job, claim = self._job_seconds, self._claim_seconds
        if job is not None and claim is not None:
            c = self.concurrency
            most = min(8 * c, max(2 * c, 2 * self.rt.settings.claim_batch))
            ahead = min(most, int(c * claim / max(job, 1e-6)))
        self.capacity = self.concurrency + ahead
        self._half = self.capacity - max(1, self.capacity // 2)

    def never_claim(self, task: str) -> None:
        """Claim no more jobs of ``task``, which this worker does not register (a rolling
        deploy's new task): a limit of 0 for it, which every claim strategy turns into an
        exclusion (store/jobs.py), so its jobs wait for a worker that registers it."""
        if task not in self._claim_limits:
            self._claim_limits = {**self._claim_limits, task: 0}

    def run(self) -> None:
        settings = self.rt.settings
        retrying = Retrying(0.4, 10.0)  # after a failed claim
        unsure = False  # a claim failed: it may have taken jobs we never received
        empty = 0  # claims in a row that found nothing
        while not self._stop.is_set():
            with self._cond:
                self._plan_capacity()
                while self.in_flight >= self.capacity and not self._stop.is_set():
                    self._cond.wait(settings.poll_interval)
                if self.capacity - self.in_flight < max(1, self.capacity // 2):
                    # Few slots free: give running jobs a moment so one claim fills more.
                    self._cond.wait(0.002)
                free = self.capacity - self.in_flight
            if self._stop.is_set():
                return
            self._wake.clear()
            want = min(free, settings.claim_batch)
            try:
                if unsure:
                    self._release_unknown()
                    unsure = False
                started = time.monotonic()
                claim_started = self.outage.now()
                jobs = claim(self.rt.store,
                    self.queue, want, self.worker_id, settings.lease_seconds,
                    self._claim_limits, self.flow or None)
                if jobs:
                    self._claim_seconds = _average(self._claim_seconds,
                                                   time.monotonic() - started)
                retrying.reset()
                self.outage.ok()
            except StorageError as exc:
                unsure = True
                self.outage.failed(exc, f"claim (queue {self.queue})", claim_started)
                self._stop.wait(retrying.next_delay())
                continue
            if jobs:
                with self._cond:
                    self.in_flight += len(jobs)
                for job in jobs:
                    self.dispatch(job)
                if self.claimed is not None:
                    self.claimed(self.queue)
            empty = 0 if jobs else min(empty + 1, 16)
            if len(jobs) < want:
                # Queue drained (or limited): sleep until a wake-up or the poll interval;
                # under a rate limit, until its next token, backing off while claims
                # come back empty (an idle queue is not polled at the token rate).
                # The idle poll is jittered as the services' ticks are, not to poll in
                # step with them; a wait for a token is not (a shorter one would claim
                # before the token, come back empty, and double the next wait).
                wait = min(settings.poll_interval, self._retry_in * 2 ** empty)
                self._wake.wait(jittered(wait) if wait >= settings.poll_interval else wait)

    def _release_unknown(self) -> None:
        released = self.rt.store.jobs.release_unknown(self.worker_id, self.queue, self.held())
        for job_id in released:
            self.rt.events.emit("job.released", job_id=job_id, queue=self.queue,
                                 reason="claim reply lost")

    def idle(self, timeout: float, cut_short: threading.Event | None = None) -> bool:
        """Wait until no job of this queue is in flight (or ``cut_short`` is set)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self.in_flight > 0:
                left = deadline - time.monotonic()
                if left <= 0 or (cut_short is not None and cut_short.is_set()):
                    return False
                self._cond.wait(min(left, 0.1))
        return True


def _average(old: float | None, new: float, weight: float = 0.1) -> float:
    """An exponentially weighted moving average (the first value starts it)."""
    return new if old is None else old + weight * (new - old)
