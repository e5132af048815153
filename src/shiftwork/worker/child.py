"""A child of ``shiftwork worker --processes N``: one ordinary Worker, started by the
supervisor (worker/supervisor.py) with ``spawn``, that holds no listener of its own (its
wake-ups come over the pipe) and competes for the leader lease only in slot 0.

It recycles itself: after ``max_jobs`` jobs, or once its RSS passes ``max_memory`` (read
after each job), it tells the supervisor (which starts its replacement at once), claims
no more, lets every job it holds finish, and exits: no job handed back, no attempt spent.

Messages to the supervisor: ``("ready", worker_id)``, ``("retiring", reason)``,
``("failed", message)`` (it could not start). From it: ``("wake", payload)``,
``("retire", reason)`` (a rolling restart), ``("stop", at_once)`` (the supervisor was
signalled: stop as on a first SIGTERM, or with ``at_once`` as on a second). The pipe
closing means the supervisor is gone: the child stops as on SIGTERM.
"""

from __future__ import annotations

import logging
import os
import resource
import signal
import sys
import threading
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING

from shiftwork.worker.relay import Link

if TYPE_CHECKING:
    from shiftwork.worker.worker import Worker

log = logging.getLogger("shiftwork.worker.supervisor")

#: A child's exit status when it could not start (its reason went over the pipe first).
START_FAILED = 3


@dataclass(frozen=True)
class ChildSpec:
    """What every child is started with (pickled to it): the worker's options."""

    import_path: str
    queues: dict[str, int]
    process_queues: frozenset[str] = frozenset()
    grace: float = 30.0
    connect_timeout: float = 60.0
    migrate: bool = False
    metrics_port: int | None = None  # child in slot i serves port + i (0: any free port)
    metrics_host: str = "127.0.0.1"
    log_level: str = "INFO"
    log_format: str = "text"
    max_jobs: int | None = None
    max_memory: int | None = None  # bytes of RSS
    log_jobs: bool = False  # --log-jobs: a line per job
    memory_limits: dict[str, int | str] | None = None  # per-queue job ceilings (-q ...:CEILING)
    gc_tuning: bool = True  # --no-gc-tuning: leave the collector at its defaults


def rss_bytes() -> int:
    """This process's resident set size now (Linux), else its peak (getrusage)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024  # macOS says bytes


class Recycler:
    """Counts the child's jobs and watches its memory; retires the worker once, when a
    limit is passed or the supervisor asks (on a thread of its own: retire() blocks)."""

    def __init__(self, spec: ChildSpec, link: Link) -> None:
        self.spec = spec
        self.link = link
        self.worker: Worker | None = None
        self.jobs = 0
        self._lock = threading.Lock()
        self._retiring = False

    def job_done(self) -> None:
        with self._lock:
            self.jobs += 1
            jobs = self.jobs
        if self.spec.max_jobs is not None and jobs >= self.spec.max_jobs:
            self.retire(f"ran {jobs} jobs (--max-jobs-per-child {self.spec.max_jobs})")
        elif self.spec.max_memory is not None:
            rss = rss_bytes()
            if rss > self.spec.max_memory:
                self.retire(f"RSS {rss // 2**20} MiB passed --max-memory-per-child "
                            f"({self.spec.max_memory // 2**20} MiB)")

    def retire(self, reason: str) -> None:
        with self._lock:
            if self._retiring or self.worker is None:
                return
            self._retiring = True
        worker = self.worker
        log.info("worker %s recycling: %s; claiming no more, finishing the jobs it holds",
                 worker.id, reason)
        self.link.send("retiring", reason)
        threading.Thread(target=worker.retire, name="shiftwork-retire", daemon=True).start()


def _listen_to_supervisor(link: Link, worker: Worker, recycler: Recycler) -> None:
    while True:
        try:
            message = link.conn.recv()
        except (EOFError, OSError):
            if not worker.stopping:
                log.warning("the supervisor is gone: stopping")
                worker.request_stop()
            return
        if message[0] == "wake":
            worker.wake(message[1])
        elif message[0] == "retire":
            recycler.retire(message[1])
        elif message[0] == "stop":
            if message[1]:
                log.warning("stopping at once: handing running jobs back now, not waiting "
                            "for them")
            worker.request_stop(now=message[1])


def _report_ready(link: Link, worker: Worker) -> None:
    while not worker.started.wait(0.5):
        if worker.stopping:
            return
    link.send("ready", worker.id)


def child_main(spec: ChildSpec, slot: int, conn: Connection) -> None:
    """The child process's body (the target of its ``spawn``)."""
    # Its own process group: a terminal's Ctrl-C (or its closing) reaches the supervisor
    # only. The supervisor alone is told to stop, and tells its children over the pipe;
    # a SIGTERM sent to every process of a unit (systemd's KillMode=control-group) is
    # ignored here, or a child told "stop" by the pipe would take it for a second signal.
    os.setpgrp()
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    from shiftwork.observe.logging import configure_logging
    from shiftwork.worker.loader import load_app
    from shiftwork.worker.worker import Worker

    configure_logging(spec.log_level, spec.log_format,
                      job_events=True if spec.log_jobs else None)
    link = Link(conn)
    recycler = Recycler(spec, link)
    try:
        app = load_app(spec.import_path)
        port = spec.metrics_port
        worker = Worker(app, spec.queues, grace=spec.grace,
                        connect_timeout=spec.connect_timeout,
                        process_queues=spec.process_queues,
                        metrics_port=port + slot if port else port,
                        metrics_host=spec.metrics_host, migrate=spec.migrate, listen=False,
                        memory_limits=spec.memory_limits,
                        leader_candidate=slot == 0, on_job_done=recycler.job_done,
                        tune_gc=spec.gc_tuning)
        recycler.worker = worker
        threading.Thread(target=_listen_to_supervisor, args=(link, worker, recycler),
                         name="shiftwork-supervisor-pipe", daemon=True).start()
        threading.Thread(target=_report_ready, args=(link, worker),
                         name="shiftwork-ready", daemon=True).start()
        worker.run(install_signals=False)
    except Exception as exc:
        log.error("worker process %d could not start: %s", slot, exc)
        link.send("failed", f"{type(exc).__name__}: {exc}")
        sys.exit(START_FAILED)
