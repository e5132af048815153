"""The worker process: pools per queue, heartbeat, rescuer, leader, graceful shutdown."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import threading

# Real time, not the runtime's clock: job timeouts and start/stop deadlines bound real waits.
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from shiftwork.composition.compose import INPUT_META_KEY, with_input
from shiftwork.core.backoff import Retrying, repeat_on_storage_error
from shiftwork.core.errors import (
    ConfigurationError,
    EncryptionKeyError,
    StorageError,
    UnknownTaskError,
    unknown_task_message,
)
from shiftwork.core.memory import ceiling_of, parse_memory_limit
from shiftwork.core.names import check_queue
from shiftwork.core.service import Lifecycle, Service
from shiftwork.core.states import JobState
from shiftwork.jobs.known_queues import unknown_queue_warning
from shiftwork.jobs.sealing import key_problem, open_claimed
from shiftwork.model.outcome import Outcome
from shiftwork.model.records import ClaimedJob, HandBack
from shiftwork.observe.worker import worker_services
from shiftwork.schedules.scheduler import ScheduleReconciler
from shiftwork.store.task_defaults import publish_task_defaults
from shiftwork.worker.batching import Batcher, check_batch_queues
from shiftwork.worker.completer import Completer
from shiftwork.worker.executor import Executor
from shiftwork.worker.heartbeat import Heartbeat
from shiftwork.worker.log_shipper import LogShipper
from shiftwork.worker.maintenance.duties import leader_services
from shiftwork.worker.maintenance.leader import Leader
from shiftwork.worker.maintenance.maintainer import Maintainer
from shiftwork.worker.maintenance.rescuer import Rescuer
from shiftwork.worker.notifier import Notifier
from shiftwork.worker.outage import outage_log
from shiftwork.worker.pool import ThreadPool
from shiftwork.worker.producer import Producer
from shiftwork.worker.run import JobTimeout, Run, error_record
from shiftwork.worker.wake_share import WakeShare

if TYPE_CHECKING:
    from shiftwork.app import App  # Worker(app): the public constructor

log = logging.getLogger("shiftwork.worker")


class Watchdog(Service):
    """Stops jobs that outlive their timeout."""

    name = "watchdog"

    def __init__(self, worker: Worker) -> None:
        super().__init__(0.05)
        self.worker = worker

    def tick(self) -> None:
        self.worker.batcher.flush_due()  # partial batches whose wait is over
        now = time.monotonic()
        for run in self.worker.runs_snapshot():
            if run.deadline is not None and now > run.deadline and not run.finished:
                self.worker.time_out(run)


class Worker:
    """Runs jobs from the given queues: ``{"emails": 20, "reports": 2}``.

    ``memory_limits`` gives queues a default memory ceiling (``{"reports": "512MB"}``, as
    ``-q reports=2:process:512MB``): their jobs run in watched child processes."""

    def __init__(self, app: App, queues: dict[str, int], *, grace: float = 30.0,
                 connect_timeout: float = 60.0, name: str | None = None,
                 process_queues: set[str] | frozenset[str] = frozenset(),
                 metrics_port: int | None = None, metrics_host: str = "127.0.0.1",
                 migrate: bool = False,
                 memory_limits: dict[str, int | str] | None = None,
                 listen: bool = True, leader_candidate: bool = True,
                 on_job_done: Callable[[], None] | None = None,
                 tune_gc: bool = False) -> None:
        if not queues:
            raise ConfigurationError("a worker needs at least one queue, e.g. --queue default=10")
        self.tune_gc = tune_gc  # a process that is only this worker (worker/gc_tuning.py)
        for queue, concurrency in queues.items():
            check_queue(queue)
            if concurrency < 1:
                raise ConfigurationError(f"queue {queue}: concurrency must be >= 1")
        unknown = set(process_queues) - set(queues)
        if unknown:
            raise ConfigurationError(f"process executor asked for queues not served: {unknown}")
        # A queue's default memory ceiling (docs/long-jobs.md): its jobs run in children.
        ceilings = {q: parse_memory_limit(v, f"queue {q}") for q, v in
                    (memory_limits or {}).items()}
        if set(ceilings) - set(queues):
            raise ConfigurationError("memory ceilings given for queues not served: "
                                     f"{set(ceilings) - set(queues)}")
        rt = app.runtime  # the worker and its services run on the App's Runtime
        limited = ceilings or any(t.options.memory_limit for t in rt.registry.tasks.values()
                                  if t.options.queue in queues)
        if (process_queues or limited) and not rt.import_path:
            raise ConfigurationError(
                "the process executor needs the app's import path (module:attr): start the "
                "worker with `shiftwork worker module:attr` or set app.import_path")
        check_batch_queues(rt.registry.tasks.values(), set(queues), set(process_queues),
                           set(ceilings))
        self.rt = rt
        self._app = app  # for /metrics alone (observe/worker.py): it shows the App's views
        self.queues = dict(queues)
        self.process_queues = frozenset(process_queues)
        self.memory_limits = {q: v for q, v in ceilings.items() if v is not None}
        self.grace = grace
        self.connect_timeout = connect_timeout
        self.migrate = migrate  # apply pending migrations at start (logged), else require them
        self.metrics_port = metrics_port  # serve Prometheus /metrics here (0: any free port)
        self.metrics_host = metrics_host
        # A child of `--processes N` (worker/supervisor.py): its supervisor holds the host's
        # one listener and calls wake(), and one child of the host is the leader candidate.
        self.listen = listen
        self.leader_candidate = leader_candidate
        self.on_job_done = on_job_done  # called from a pool thread after each job's outcome
        self.id = name or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._runs: dict[tuple[int, int], Run] = {}
        self._runs_lock = threading.Lock()
        self._stop = threading.Event()
        self._stopped = threading.Event()
        self._hurry = threading.Event()  # a second signal: running jobs go back at once
        self.loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self.executor: Executor | None = None
        self.producers: dict[str, Producer] = {}
        self.pools: dict[str, ThreadPool] = {}
        self.completer = Completer(rt)
        self.batcher = Batcher(rt.clock, self._start_batch)  # batch tasks' jobs (batching.py)
        self.services: list[Lifecycle] = []
        self.started = threading.Event()
        self.wake_share: WakeShare | None = None
        self.wake_skipped = 0  # wake-ups left to another worker's rank (worker/wake_share.py)

    # -- start -----------------------------------------------------------------------

    def _connect(self) -> None:
        deadline = time.monotonic() + self.connect_timeout
        retrying = Retrying(0.5, 5.0)
        while True:
            try:
                if self.migrate:
                    self.rt.migrate()  # before the first use, which checks the schema
                self.rt.store.ping()
                for queue in self.queues:  # a typo in -q would wait forever for jobs: say so
                    unknown = unknown_queue_warning(self.rt.registry, self.rt.store, queue)
                    if unknown:
                        log.warning("%s", unknown)
                self.rt.store.fleet.workers_upsert(self.id, socket.gethostname(), os.getpid(),
                                              self.queues, list(self.rt.registry.tasks))
                # The options of this release's tasks, for SQL producers (a deploy that
                # changed them reaches the table without a migrate).
                publish_task_defaults(self.rt.store, self.rt.registry.task_defaults())
                return
            except StorageError as exc:
                delay = retrying.next_delay()
                if time.monotonic() + delay > deadline:
                    raise StorageError(
                        f"gave up reaching the database after {self.connect_timeout:.0f}s: {exc}"
                    ) from exc
                log.warning("cannot reach the database (%s); retrying in %.1fs", exc, delay)
                time.sleep(delay)

    def start(self) -> None:
        # Everything start-up asks of the database is retried there, so a server that
        # restarts while a worker starts (or that is not up yet) is waited for.
        self._connect()
        if any(t.is_async for t in self.rt.registry.tasks.values()
               if t.options.queue in self.queues):
            self.loop = asyncio.new_event_loop()
            self._loop_thread = threading.Thread(target=self.loop.run_forever,
                                                 name="shiftwork-asyncio", daemon=True)
            self._loop_thread.start()
        self.executor = Executor(self.rt, self.loop, self.queues)
        if self.tune_gc:  # what start-up made lives as long as the process: frozen
            from shiftwork.worker.gc_tuning import tune_gc

            tune_gc()
        self.completer.start()
        for queue, concurrency in self.queues.items():
            self.pools[queue] = ThreadPool(concurrency, queue)
            # A batch task's slot holds a whole batch: the producer claims for all of them.
            sizes = [t.options.batch.size for t in self.rt.registry.tasks.values()
                     if t.options.queue == queue and t.options.batch]
            self.producers[queue] = Producer(self.rt, queue, concurrency * max(sizes or [1]),
                                             self.id, self._dispatch, self.held_leases,
                                             self._claimed if sizes else None)
        self.wake_share = WakeShare(self.rt, self.id, list(self.queues))
        outage = outage_log(self.rt)
        notifier = Notifier(self.rt.store, self.wake, outage) if self.listen else None
        # Not a candidate: the lease is never tried, so its rescuer is only the backstop
        # and no leader-only service (the scheduler, retention, ...) runs here.
        reconciler = ScheduleReconciler(self.rt)
        leader = Leader(self.rt, self.id)
        leader.maintainer = Maintainer(
            lambda: leader_services(self.rt, self.id, leader, reconciler.done))
        self.services = [*([notifier] if notifier else []),
                         Heartbeat(self.rt, self.id, self.held_leases, self._on_heartbeat),
                         reconciler, Rescuer(self.rt, leader),
                         *([leader] if self.leader_candidate else []), Watchdog(self),
                         LogShipper(self.rt, self.runs_snapshot),
                         *worker_services(self._app, self.id, lambda: len(self.runs_snapshot()),
                                          self.metrics_port, self.metrics_host)]
        for service in self.services:
            if isinstance(service, Service):
                service.outage = outage
            service.start()
        if notifier is not None:
            notifier.ready.wait(5.0)
        for producer in self.producers.values():
            producer.start()
        self.rt.events.emit("worker.started", worker_id=self.id,
                             queues=",".join(f"{q}={c}" for q, c in self.queues.items()))
        self.started.set()

    def wake(self, payload: str) -> None:
        """A wake-up (``queue|count|token`` or a queue name, store/wakeups.py) heard by this
        worker's notifier or relayed by its supervisor."""
        queue = self.wake_share.queue_to_wake(payload) if self.wake_share else payload
        if queue is None:
            self.wake_skipped += 1
            return
        if queue == "*":
            for p in self.producers.values():
                p.wake()
        elif queue in self.producers:
            self.producers[queue].wake()

    # -- running jobs ------------------------------------------------------------------

    def _dispatch(self, job: ClaimedJob) -> None:
        assert self.executor is not None
        try:
            task = self.rt.registry.get_task(job.task)
        except UnknownTaskError:
            self._pass_over(job)
            return
        try:
            job = open_claimed(self.rt.keys, job)  # an encrypted task's arguments, checkpoint
            if INPUT_META_KEY in job.meta:  # a chain link or a group's callback: its input
                try:
                    job = with_input(self.rt.store, job, self.rt.keys)
                except EncryptionKeyError:
                    raise
                except Exception as exc:  # the database is out: try again after a backoff
                    self._input_failed(job, exc)
                    return
        except EncryptionKeyError as exc:  # the deployment's problem, not the job's
            log.warning("job %d (task %s): %s", job.id, job.task, exc)
            self.completer.submit(key_problem(self.rt.clock.now(), job, exc))
            self.producers[job.queue].slot_freed()
            return
        run = Run.of(self.rt, job, task, self._on_done, self._on_begin)
        run.memory_limit = ceiling_of(job.meta, task.options.memory_limit,
                                      self.memory_limits.get(job.queue))
        with self._runs_lock:
            self._runs[(job.id, job.attempt)] = run
        if task.options.batch is not None:  # held (and renewed) until its batch is called
            self.batcher.add(run)
            return
        self.executor.start(run, self.pools[job.queue], job.queue in self.process_queues
                            or run.memory_limit is not None)

    def _start_batch(self, runs: list[Run]) -> None:
        assert self.executor is not None
        self.executor.start_batch(runs, self.pools[runs[0].job.queue])

    def _claimed(self, queue: str) -> None:
        """A claim's jobs were dispatched: batches that wait for nothing more start."""
        self.batcher.flush_due(queue, claimed=True)

    def _input_failed(self, job: ClaimedJob, exc: Exception) -> None:
        """A chain link's or a callback's input could not be read: retried after a second."""
        self.completer.submit(Outcome(
            job.id, job.attempt, JobState.DEAD if job.attempt >= job.max_attempts
            else JobState.RETRYING, run_at=self.rt.clock.now()
            + timedelta(seconds=1), error=error_record(exc, job.attempt, "input"),
            task=job.task, queue=job.queue))
        self.producers[job.queue].slot_freed()

    def _pass_over(self, job: ClaimedJob) -> None:
        """A job whose task this worker does not register (in a rolling deploy, a new
        task's job claimed by an old worker): given back unrun at once, its attempt not
        counted, and the task's jobs are never claimed by this worker again, so they wait
        for a worker that registers it."""
        self.producers[job.queue].never_claim(job.task)
        reason = HandBack("unknown_task", "UnknownTaskError", unknown_task_message(job.task)
                          + "; given back unrun, attempt not counted, for a worker that "
                          "registers it")
        try:
            # Fenced by attempt and worker: a repeat after a lost reply changes nothing more.
            repeat_on_storage_error(
                lambda: self.rt.store.jobs.hand_back(self.id, [(job.id, job.attempt)], reason))
        except StorageError as exc:  # its lease runs out and the rescuer brings it back
            log.warning("could not give back job %d (task %s): %s", job.id, job.task, exc)
        self.rt.events.emit("job.passed_over", job_id=job.id, task=job.task, queue=job.queue)
        self.producers[job.queue].slot_freed()

    def _on_begin(self, run: Run) -> None:
        job = run.job
        self.rt.events.emit("job.started", job_id=job.id, task=job.task, queue=job.queue,
                             attempt=job.attempt)

    def _on_done(self, run: Run, outcome: Outcome) -> None:
        # Into the completer before out of the runs: held_leases() sees it in one of them.
        if outcome.state is not JobState.AVAILABLE:  # AVAILABLE: it yielded to a paused queue
            self.completer.submit(outcome)
        with self._runs_lock:
            self._runs.pop((run.job.id, run.job.attempt), None)
        self.producers[run.job.queue].slot_freed(outcome.duration)
        if self.on_job_done is not None:
            self.on_job_done()

    def held_leases(self) -> list[tuple[int, int]]:
        """The (job id, attempt) pairs this worker holds: claimed and running or waiting to
        begin, or finished with the outcome not yet written."""
        with self._runs_lock:
            runs = list(self._runs)
        return runs + self.completer.held()

    def runs_snapshot(self) -> list[Run]:
        with self._runs_lock:
            return list(self._runs.values())

    def time_out(self, run: Run) -> None:
        assert self.executor is not None
        if run.task.is_async or run.in_process:
            return  # asyncio.wait_for, or the process supervisor, handles these
        outcome = self.executor.decide.error(
            run, TimeoutError(f"timed out after {run.task.options.timeout}s"), kind="timeout")
        if run.finalize(outcome):
            # The thread keeps running until JobTimeout reaches it; give the pool a fresh one.
            self.executor.interrupt_sync(run, JobTimeout)
            self.pools[run.job.queue].replace()

    def _on_heartbeat(self, held: list[tuple[int, int, bool]], started: float) -> None:
        assert self.executor is not None
        mine = {(job_id, attempt): cancel for job_id, attempt, cancel in held}
        for run in self.runs_snapshot():
            key = (run.job.id, run.job.attempt)
            if key in mine:
                if mine[key] and not run.ctx.cancelled:
                    self.executor.cancel(run)
            elif run.started < started and not run.finished:
                log.warning("job %s attempt %s: lease lost (rescued or re-claimed elsewhere); "
                            "its result will be rejected", run.job.id, run.job.attempt)

    # -- stopping ------------------------------------------------------------------------

    @property
    def stopping(self) -> bool:
        """Whether a stop was requested (or the worker stopped)."""
        return self._stop.is_set()

    def retire(self) -> None:
        """Claim no more, let every job held (running or claimed ahead) finish, then stop:
        how a supervisor recycles a child without handing a job back. Blocks; a stop
        request meanwhile (SIGTERM) ends the wait and the usual shutdown takes over."""
        for producer in self.producers.values():
            producer.request_stop()
        for producer in self.producers.values():
            producer.join(5.0)  # a claim in flight dispatches its jobs first
        for producer in self.producers.values():
            while not producer.idle(0.5, self._stop):
                if self._stop.is_set():
                    return
        self.request_stop()

    def request_stop(self, now: bool = False) -> None:
        """Stop: unstarted jobs go back at once, running ones get the grace period; with
        ``now`` (or asked a second time so), running ones go back at once as well."""
        if now:
            self._hurry.set()
        self._stop.set()

    def run(self, install_signals: bool = True) -> None:
        """Start, block until SIGTERM/SIGINT (or :meth:`request_stop`), then shut down."""
        if install_signals and threading.current_thread() is threading.main_thread():
            def handler(signum: int, frame: Any) -> None:
                if self._stop.is_set() and not self._hurry.is_set():
                    log.warning("second %s: handing running jobs back now, not waiting for "
                                "them", signal.Signals(signum).name)
                    self._hurry.set()
                self._stop.set()

            signal.signal(signal.SIGTERM, handler)
            signal.signal(signal.SIGINT, handler)
        self.start()
        try:
            # Not self._stop.wait(): a signal handled while that wait holds the event's
            # lock would block, in set(), on the lock its own thread holds (a child of
            # --processes was found so, deadlocked for good).
            while not self._stop.is_set():
                time.sleep(0.1)
        finally:
            self.shutdown()

    def _take_over(self, started_too: bool) -> list[Run]:
        """Finalize here the runs not finished yet (with ``started_too`` False, only those
        that have not begun), so their own threads' results are discarded."""
        taken: list[Run] = []
        for run in self.runs_snapshot():
            with run.lock:
                if run.finished or (run.begun and not started_too):
                    continue
                run.finished = True
            taken.append(run)
        return taken

    def _hand_back(self, runs: list[Run], what: str) -> None:
        """Give ``runs`` back to the queue (attempt not counted)."""
        pairs = [(r.job.id, r.job.attempt) for r in runs]
        # Fenced by attempt and worker: a repeat after a lost reply changes nothing more.
        count = repeat_on_storage_error(lambda: self.rt.store.jobs.hand_back(self.id, pairs))
        for run in runs:
            self.rt.events.emit("job.handed_back", job_id=run.job.id, attempt=run.job.attempt)
        log.info("handed back %d %s", count, what)

    def _hand_back_waiting(self) -> None:
        """Jobs claimed ahead that have not begun go back to the queue at once."""
        waiting = self._take_over(started_too=False)
        if not waiting:
            return
        with self._runs_lock:
            for run in waiting:
                self._runs.pop((run.job.id, run.job.attempt), None)
        try:
            self._hand_back(waiting, "jobs that had not started")
        except StorageError:
            log.warning("could not hand back %d waiting jobs; their leases will expire",
                        len(waiting), exc_info=True)
        for run in waiting:
            self.producers[run.job.queue].slot_freed()

    def shutdown(self) -> None:
        if self._stopped.is_set():
            return
        self._stopped.set()
        if not self._stop.is_set():  # from run(), already set: no lock a signal could meet
            self._stop.set()
        self.rt.events.emit("worker.stopping", worker_id=self.id, grace=self.grace)
        for producer in self.producers.values():
            producer.request_stop()
        for producer in self.producers.values():
            producer.join(5.0)
        self._hand_back_waiting()
        deadline = time.monotonic() + self.grace
        for producer in self.producers.values():  # a second signal ends the wait
            producer.idle(max(deadline - time.monotonic(), 0), self._hurry)
        # Whatever is still running after the grace period goes back to the queue.
        handed = self._take_over(started_too=True)
        for run in handed:
            if self.executor is not None:
                if run.task.is_async:
                    self.executor.cancel(run)
                else:
                    self.executor.interrupt_sync(run, JobTimeout)
        self.completer.stop()
        if handed:
            self._hand_back(handed, "running jobs")
        for service in reversed(self.services):
            service.stop()
        for pool in self.pools.values():
            pool.shutdown()
        try:
            self.rt.store.fleet.workers_delete(self.id)
        except StorageError:
            log.debug("could not remove worker row", exc_info=True)
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self.loop.stop)
        self.rt.events.emit("worker.stopped", worker_id=self.id)
