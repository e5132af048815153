"""How long a job taken by a claim whose reply was lost takes to come back.

    python -m benchmarks.orphans [--runs 5] [--pg postgresql://...] [--engines sqlite,postgres]

With the default settings (heartbeat 5 s, lease 10 s, rescue every 1.25 s), a real
in-process worker on each engine, two cases, each ``--runs`` times:

- give-back: the claim committed and its reply was lost (a ``FaultyStore`` at the
  storage seam raises ``CommitUnknownError`` after the claim commits); the producer
  gives the jobs back before its next claim. Timed from the worker's start (its first claim)
  to the ``job.released`` event.
- rescue: a claim that commits under the worker's id after the worker stopped waiting
  for it (too late for the give-back), so the worker never holds it. Its lease is never
  renewed; timed from the claim to the ``job.rescued`` event.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
import uuid
from typing import Any

from tests.faults.faulty_store import inject_faults

from shiftwork import App, Settings
from shiftwork.worker import Worker


def _wait(event: threading.Event, what: str, timeout: float = 60) -> None:
    if not event.wait(timeout):
        raise RuntimeError(f"timed out waiting for {what}")


def one_run(make: Any, case: str) -> float:
    app: App = make()
    app.migrate()

    @app.task(name="bench.orphan")
    def orphan() -> None: ...

    seen = threading.Event()
    name = "job.released" if case == "give-back" else "job.rescued"
    app.events.subscribe(lambda n, f: seen.set() if n == name else None)
    faulty = inject_faults(app)
    if case == "give-back":  # the worker's first claim commits, and its reply is lost
        orphan.enqueue()
        faulty.lose_reply("jobs.claim")
    worker = Worker(app, {"default": 2} if case == "give-back" else {"other": 1})
    thread = threading.Thread(target=worker.run, kwargs={"install_signals": False}, daemon=True)
    started = time.monotonic()
    thread.start()
    try:
        assert worker.started.wait(15)
        if case == "rescue":  # a ghost claim under the live worker's id, for a queue it
            orphan.enqueue()  # does not serve
            app.store.jobs.claim("default", 1, worker.id, app.settings.lease_seconds)
            started = time.monotonic()
        _wait(seen, name)
        return time.monotonic() - started
    finally:
        worker.request_stop()
        thread.join(30)
        if app.store.engine == "postgres":  # each run's schema of its own, not left behind
            app.store.drop_schema()  # type: ignore[attr-defined]
        app.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--engines", default="sqlite,postgres")
    defaults = Settings()
    parser.add_argument("--lease", type=float, default=defaults.lease_seconds,
                        help="lease seconds (a heartbeat a quarter of it when shorter than "
                             "the default's); a smoke run waits less for the rescue")
    args = parser.parse_args()
    chosen = args.engines.split(",")
    unknown = [e for e in chosen if e not in ("sqlite", "postgres")]
    if unknown:  # before any run, not after the first engine's
        parser.error(f"--engines: unknown engine {unknown[0]!r} (sqlite, postgres)")
    if not args.lease > 0:
        parser.error(f"--lease must be > 0 seconds, got {args.lease}")
    settings = defaults if args.lease == defaults.lease_seconds else Settings(
        lease_seconds=args.lease,
        heartbeat_interval=min(defaults.heartbeat_interval, args.lease / 4))
    with tempfile.TemporaryDirectory() as tmp:
        engines = {
            "sqlite": lambda: App(f"sqlite:///{tmp}/{uuid.uuid4().hex}.db",
                                  settings=settings),
            "postgres": lambda: App(args.pg, schema=f"bench_{uuid.uuid4().hex[:8]}",
                                    settings=settings),
        }
        for engine in chosen:
            make = engines[engine]
            for case in ("give-back", "rescue"):
                times = [one_run(make, case) for _ in range(args.runs)]
                print(f"{engine:8} {case:9}  median {statistics.median(times):6.2f} s   "
                      f"max {max(times):6.2f} s   ({args.runs} runs)")


if __name__ == "__main__":
    main()
