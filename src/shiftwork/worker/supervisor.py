"""``shiftwork worker --processes N``: a supervisor process and N worker processes.

The supervisor runs no job and holds no pool: it holds the host's one wake-up listener
(worker/relay.py) and its children (worker/child.py), one per slot. It

- restarts a child that dies, after a backoff (retry.py's ``Backoff``, per slot: 1 s,
  doubling to 30 s; a child that ran a while starts the count again), and gives up,
  stopping the others and exiting non-zero, when a slot's child fails
  ``START_ATTEMPTS`` times in a row before it was ready (an app that raises on import,
  a schema not migrated): a restart cannot fix that;
- starts a replacement at once when a child retires (recycling itself after
  ``--max-jobs-per-child`` jobs or past ``--max-memory-per-child``), the old one
  finishing its jobs meanwhile;
- on SIGTERM or SIGINT tells every child to stop (each stops gracefully, as a single
  worker does on SIGTERM), and on the second, to stop at once (each hands its running
  jobs back, as on a second SIGTERM);
- on SIGHUP restarts its children one at a time: the old child retires (claims no more,
  finishes what it holds: no job handed back) while its replacement starts; the next
  slot's turn comes once the old one has exited and the new one is ready.

One leader candidate per host: the child in slot 0 (its replacement after a restart).
A dead child's jobs come back by the lease rescue, as a dead single worker's do.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal

# Real time, not the runtime's clock: restarts and kills of real child processes.
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import TYPE_CHECKING, Any

from shiftwork.core.backoff import Backoff
from shiftwork.worker.child import ChildSpec, child_main
from shiftwork.worker.relay import Link, Relay

if TYPE_CHECKING:
    from shiftwork.runtime import Runtime

log = logging.getLogger("shiftwork.worker.supervisor")

_SPAWN = multiprocessing.get_context("spawn")  # nothing inherited: no locks, no connections

#: A slot whose child fails this many times in a row before it is ready: give up.
START_ATTEMPTS = 3
#: Delays between a slot's restarts after crashes (no jitter: one host's own children).
RESTART_BACKOFF = Backoff(initial=1.0, coefficient=2.0, maximum=30.0, jitter=False)
#: A child that ran this long before it died starts its slot's crash count again.
STEADY_SECONDS = 60.0
#: Seconds between tries to open the listener's store, while it fails.
RELAY_RETRY = 5.0
#: After the grace period (and this margin), children still running are killed.
KILL_MARGIN = 15.0


@dataclass
class _Child:
    slot: int
    process: BaseProcess
    link: Link
    started: float = field(default_factory=time.monotonic)
    worker_id: str | None = None  # set when it reports ready
    retiring: bool = False
    failure: str | None = None  # what it said when it could not start


class Supervisor:
    def __init__(self, rt: Runtime, spec: ChildSpec, processes: int) -> None:
        self.rt = rt
        self.spec = spec
        self.processes = processes
        self.relay: Relay | None = None  # opened once a child is ready (_open_relay)
        self._relay_at = 0.0
        self.slots: dict[int, _Child] = {}  # the current child of each slot
        self.retired: list[_Child] = []  # retiring: finishing their jobs, then exiting
        self._crashes = dict.fromkeys(range(processes), 0)  # in a row, per slot
        self._start_failures = dict.fromkeys(range(processes), 0)
        self._restart_at: dict[int, float] = {}  # slot -> when to start its child again
        self._signals = 0  # SIGTERM/SIGINT received
        self._stop_sent = 0  # SIGTERMs passed on to the children
        self._stop_deadline: float | None = None
        self._roll: list[int] = []  # slots still to restart (SIGHUP)
        self._rolling: tuple[_Child, int] | None = None  # the retiring child, its slot
        self.gave_up: str | None = None

    # -- children ----------------------------------------------------------------------

    def _start(self, slot: int) -> None:
        mine, theirs = _SPAWN.Pipe()
        process = _SPAWN.Process(target=child_main, args=(self.spec, slot, theirs),
                                 name=f"shiftwork-worker-{slot}", daemon=False)
        process.start()
        theirs.close()  # the child's end lives in the child: EOF here when it exits
        child = _Child(slot, process, Link(mine))
        self.slots[slot] = child
        if self.relay is not None:
            self.relay.add(child.link)
        log.info("worker process %d started (pid %s)", slot, process.pid)

    def _retire(self, child: _Child, reason: str) -> None:
        """Move ``child`` out of its slot (it finishes its jobs) and start its successor."""
        if child.retiring:
            return
        child.retiring = True
        child.link.send("retire", reason)
        self.retired.append(child)
        if self.slots.get(child.slot) is child:
            del self.slots[child.slot]
            if not self._signals:
                self._start(child.slot)

    def _children(self) -> list[_Child]:
        return [*self.slots.values(), *self.retired]

    def _on_message(self, child: _Child, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "ready":
            child.worker_id = message[1]
            self._start_failures[child.slot] = 0
            log.info("worker process %d ready (pid %s, worker %s)", child.slot,
                     child.process.pid, child.worker_id)
        elif kind == "retiring":
            log.info("worker process %d (pid %s) recycling: %s; starting its replacement",
                     child.slot, child.process.pid, message[1])
            self._retire(child, message[1])
        elif kind == "failed":
            child.failure = message[1]

    def _open_relay(self) -> None:
        """The host's listener, once a child is ready: by then the child has waited for
        the database and checked (or migrated) the schema, so the supervisor need not.
        The check's pooled connection is closed: the listener has one of its own, and the
        supervisor runs no query."""
        try:
            store = self.rt.store
            store.close()
        except Exception as exc:  # the database went away again: the children poll
            log.warning("cannot open the wake-up listener (%s); trying again in %.0fs", exc,
                        RELAY_RETRY)
            self._relay_at = time.monotonic() + RELAY_RETRY
            return
        self.relay = Relay(store)
        for child in self._children():
            self.relay.add(child.link)
        self.relay.start()

    def _on_exit(self, child: _Child) -> None:
        child.process.join()
        code = child.process.exitcode
        if self.relay is not None:
            self.relay.remove(child.link)
        child.link.close()
        how = f"signal {signal.Signals(-code).name}" if code is not None and code < 0 \
            else f"exit status {code}"
        if child in self.retired:
            self.retired.remove(child)
            log.info("worker process %d (pid %s) recycled (%s)", child.slot,
                     child.process.pid, how)
            return
        if self.slots.get(child.slot) is child:
            del self.slots[child.slot]
        if self._signals:
            log.info("worker process %d (pid %s) stopped (%s)", child.slot,
                     child.process.pid, how)
            return
        slot = child.slot
        if child.worker_id is None:  # died before it was ready
            self._start_failures[slot] += 1
            if self._start_failures[slot] >= START_ATTEMPTS:
                self.gave_up = (
                    f"worker process {slot} failed to start {START_ATTEMPTS} times in a row "
                    f"(last: {how}{': ' + child.failure if child.failure else ''}); "
                    "giving up: fix the cause and start the worker again")
                log.error("%s", self.gave_up)
                return
        elif time.monotonic() - child.started > STEADY_SECONDS:
            self._crashes[slot] = 0
        self._crashes[slot] += 1
        delay = RESTART_BACKOFF.delay(self._crashes[slot])
        log.warning("worker process %d (pid %s) died (%s%s); restarting it in %.0fs", slot,
                    child.process.pid, how, ": " + child.failure if child.failure else "",
                    delay)
        self._restart_at[slot] = time.monotonic() + delay

    # -- signals -----------------------------------------------------------------------

    def _on_stop_signal(self, signum: int, frame: Any) -> None:
        self._signals += 1

    def _on_hangup(self, signum: int, frame: Any) -> None:
        if self._signals:
            return
        log.info("SIGHUP: restarting the %d worker processes one at a time",
                 self.processes)
        self._roll = [slot for slot in range(self.processes) if slot not in self._roll]

    def _pass_stop_on(self) -> None:
        """Send each SIGTERM received on to every child (the second one: at once)."""
        while self._stop_sent < min(self._signals, 2):
            self._stop_sent += 1
            if self._stop_sent == 1:
                log.info("stopping: the worker processes finish their running jobs "
                         "(grace %.0fs)", self.spec.grace)
                self._stop_deadline = time.monotonic() + self.spec.grace + KILL_MARGIN
                self._restart_at.clear()
                self._roll = []
            else:
                log.warning("second signal: the worker processes hand their running jobs "
                            "back now")
            for child in self._children():
                # Over the pipe, not as a signal: two signals sent close together can
                # arrive as one, and the second must not be lost.
                child.link.send("stop", self._stop_sent == 2)
        if self._stop_deadline is not None and time.monotonic() > self._stop_deadline:
            for child in self._children():
                log.error("worker process %d (pid %s) still running after the grace "
                          "period: killing it (its jobs come back by the lease rescue)",
                          child.slot, child.process.pid)
                _signal(child, signal.SIGKILL)
            self._stop_deadline = None

    def _step_roll(self) -> None:
        if self._rolling is not None:
            old, slot = self._rolling
            new = self.slots.get(slot)
            if old in self.retired or new is None or new.worker_id is None:
                return  # the old one still finishing, or its successor not ready yet
            self._rolling = None
        if self._roll:
            slot = self._roll.pop(0)
            child = self.slots.get(slot)
            if child is None:  # dead and waiting for its restart: a fresh one comes anyway
                return
            self._rolling = (child, slot)
            log.info("SIGHUP: restarting worker process %d (pid %s)", slot, child.process.pid)
            self._retire(child, "SIGHUP: a rolling restart")

    # -- the loop ----------------------------------------------------------------------

    def run(self) -> int:
        """Start the children and supervise them until stopped; the exit status."""
        signal.signal(signal.SIGTERM, self._on_stop_signal)
        signal.signal(signal.SIGINT, self._on_stop_signal)
        signal.signal(signal.SIGHUP, self._on_hangup)
        log.info("starting %d worker processes (queues %s)", self.processes,
                 ",".join(f"{q}={c}" for q, c in self.spec.queues.items()))
        try:
            for slot in range(self.processes):
                self._start(slot)
            while self._children() or (self._restart_at and not self._signals):
                self._pass_stop_on()
                self._step(0.2)
                if self.gave_up and not self._signals:
                    self._signals = 1  # stop the others, then exit non-zero
                now = time.monotonic()
                for slot, at in list(self._restart_at.items()):
                    if at <= now and not self._signals:
                        del self._restart_at[slot]
                        self._start(slot)
                if not self._signals:
                    self._step_roll()
                if self.relay is None and now >= self._relay_at and any(
                        child.worker_id for child in self._children()):
                    self._open_relay()
        finally:
            if self.relay is not None:
                self.relay.stop()
        log.info("all worker processes stopped")
        return 1 if self.gave_up else 0

    def _step(self, timeout: float) -> None:
        children = self._children()
        by_conn: dict[Any, _Child] = {child.link.conn: child for child in children}
        by_sentinel: dict[Any, _Child] = {child.process.sentinel: child for child in children}
        for ready in wait([*by_conn, *by_sentinel], timeout):
            if ready in by_conn:
                child = by_conn[ready]
                conn: Connection = ready  # type: ignore[assignment]
                try:
                    while conn.poll():
                        self._on_message(child, conn.recv())
                except (EOFError, OSError):
                    pass  # it exited: its sentinel says so
        for child in by_sentinel.values():
            if not child.process.is_alive():
                try:
                    while child.link.conn.poll():  # what it said before it went
                        self._on_message(child, child.link.conn.recv())
                except (EOFError, OSError):
                    pass
                self._on_exit(child)


def _signal(child: _Child, signum: int) -> None:
    if child.process.pid is not None:
        with contextlib.suppress(ProcessLookupError):  # it has just exited
            os.kill(child.process.pid, signum)
