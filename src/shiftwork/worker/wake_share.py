"""One wake-up per job, not one per process: which wake-ups this worker acts on.

A producer's wake-up names the queue, how many jobs became due and a random token
(store/wakeups.py, ``shared_wakeups``). Every process serving the queue hears it; each
knows the roster of live workers serving the queue (the workers table, read at most
every ``ROSTER_SECONDS``) and its rank in it, and claims only if its rank is among the
``count`` that follow the token. So one enqueue costs about one claim whatever the size
of the fleet, and a batch of k jobs wakes k processes (or all, if fewer).

What can go wrong costs latency only, never a job: a chosen worker that is busy, or
died since the roster was read, leaves the job to the next claim of a worker with free
slots, or to polling (``Settings.poll_interval``). A worker not yet on the roster, and
any bare-queue wake-up (``"*"``, a hand-back, a release), wakes every process.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from shiftwork.store.wakeups import ANY_QUEUE, parse_wakeup

if TYPE_CHECKING:
    from shiftwork.runtime import Runtime

log = logging.getLogger("shiftwork.worker")

#: How stale the roster may be (seconds): new workers are ranked after at most this.
ROSTER_SECONDS = 10.0


class WakeShare:
    def __init__(self, rt: Runtime, worker_id: str, queues: list[str]) -> None:
        self.rt = rt
        self.worker_id = worker_id
        self.queues = set(queues)
        self._ranks: dict[str, tuple[int, int]] = {}  # queue -> (my rank, workers serving it)
        self._read_at: float | None = None  # the clock's monotonic reading at the last read
        self._lock = threading.Lock()

    def queue_to_wake(self, payload: str) -> str | None:
        """The queue this worker should claim from for ``payload`` (``"*"``: all), or None
        when another worker's rank was chosen."""
        queue, count, token = parse_wakeup(payload)
        if count is None or queue == ANY_QUEUE:
            return queue
        read_at = self._read_at
        if read_at is None or self.rt.clock.monotonic() - read_at > ROSTER_SECONDS:
            self._read_roster()
        rank = self._ranks.get(queue)
        if rank is None:
            return queue  # not on the roster yet: claim, as before
        mine, serving = rank
        if count >= serving or (mine - token) % serving < count:
            return queue
        return None

    def _read_roster(self) -> None:
        with self._lock:
            self._read_at = self.rt.clock.monotonic()
            try:
                workers = self.rt.store.fleet.workers_list()
            except Exception:  # no roster: every wake-up wakes (the old behaviour)
                log.debug("cannot read the worker roster", exc_info=True)
                self._ranks = {}
                return
            if not workers:
                self._ranks = {}
                return
            # Live: beaten within three heartbeats of the freshest (no clock comparison).
            newest = max(w.heartbeat_at for w in workers)
            stale = 3 * self.rt.settings.heartbeat_interval
            ranks: dict[str, tuple[int, int]] = {}
            for queue in self.queues:
                serving = sorted(w.id for w in workers if queue in w.queues
                                 and (newest - w.heartbeat_at).total_seconds() <= stale)
                if self.worker_id in serving:
                    ranks[queue] = (serving.index(self.worker_id), len(serving))
            self._ranks = ranks
