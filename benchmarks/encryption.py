"""What payload encryption costs: enqueue and drain with and without ``encrypt=True``.

    python benchmarks/encryption.py [--jobs 5000] [--rounds 3] [--concurrency 20]
                                    [--pg postgresql://...] [--engine sqlite|postgres|all]

Per engine, the same task (a 200-character argument, a small dict returned, so the
arguments and the result are sealed and opened once each) enqueued in one batch and
drained by one in-process worker, plain and encrypted, the two alternating round by
round; the median of each and their ratio. The drain is timed from the first claim to
the last finish, as the rows record them.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
import uuid
from typing import Any

from shiftwork import App, JobState, Keys
from shiftwork.jobs.sealing import open_claimed, seal_outcome
from shiftwork.model.outcome import Outcome
from shiftwork.model.records import ClaimedJob
from shiftwork.store.rows import split_args
from shiftwork.worker import Worker

PAYLOAD = "x" * 200


def declare(app: App) -> None:
    for name, encrypt in (("bench.plain", False), ("bench.sealed", True)):
        @app.task(name=name, queue=name, encrypt=encrypt)
        def work(card: str) -> dict[str, Any]:
            return {"card": card[-4:], "ok": True}


def one_round(app: App, task: str, jobs: int, concurrency: int) -> tuple[float, float]:
    """(enqueue seconds, drain seconds) for ``jobs`` jobs of ``task``."""
    start = time.perf_counter()
    done = app.get_task(task).enqueue_many([(PAYLOAD,)] * jobs)
    enqueue = time.perf_counter() - start
    worker = Worker(app, {task: concurrency})
    thread = threading.Thread(target=worker.run, kwargs={"install_signals": False},
                              daemon=True)
    thread.start()
    last = done[-1].id
    while app.get_job(last).state is not JobState.SUCCEEDED:
        time.sleep(0.01)
    worker.request_stop()
    thread.join(60)
    rows = app.list_jobs(queue=task, limit=jobs)  # this round's: the newest
    assert len(rows) == jobs and all(j.state is JobState.SUCCEEDED for j in rows)
    assert rows[0].result == {"card": "xxxx", "ok": True}
    first = min(j.attempted_at for j in rows if j.attempted_at)
    end = max(j.finished_at for j in rows if j.finished_at)
    return enqueue, (end - first).total_seconds()


def run(label: str, app: App, jobs: int, rounds: int, concurrency: int) -> dict[str, float]:
    declare(app)
    app.migrate()
    times: dict[str, list[tuple[float, float]]] = {"bench.plain": [], "bench.sealed": []}
    for _ in range(rounds):
        for task in times:
            times[task].append(one_round(app, task, jobs, concurrency))
    out = {}
    for task, samples in times.items():
        enq = statistics.median(s[0] for s in samples)
        drn = statistics.median(s[1] for s in samples)
        out[f"{task}.enqueue"], out[f"{task}.drain"] = jobs / enq, jobs / drn
    print(f"{label}: enqueue {out['bench.plain.enqueue']:8.0f} jobs/s plain, "
          f"{out['bench.sealed.enqueue']:8.0f} encrypted "
          f"(x{out['bench.sealed.enqueue'] / out['bench.plain.enqueue']:.2f})")
    print(f"{label}: drain   {out['bench.plain.drain']:8.0f} jobs/s plain, "
          f"{out['bench.sealed.drain']:8.0f} encrypted "
          f"(x{out['bench.sealed.drain'] / out['bench.plain.drain']:.2f}); "
          f"median of {rounds}, {jobs} jobs, {concurrency} slots")
    return out


def per_value(keys: Keys, n: int = 20_000) -> None:
    """The cipher's own cost per value, apart from the database: seal and open."""
    text = '{"args":["' + PAYLOAD + '"],"kwargs":{}}'
    start = time.perf_counter()
    for _ in range(n):
        keys.seal_json(text, "args:bench")
    seal = (time.perf_counter() - start) / n
    envelope = keys.seal(text, "args:bench")
    start = time.perf_counter()
    for _ in range(n):
        keys.open(envelope, "args:bench")
    opened = (time.perf_counter() - start) / n
    print(f"per value ({len(text)} bytes): seal {seal * 1e6:.1f} µs, open {opened * 1e6:.1f} µs")
    # What a worker adds per job: its arguments opened, its result sealed.
    args, kwargs = split_args(keys.seal_json(text, "args:bench"))
    job = ClaimedJob(1, "bench", "bench", args, kwargs, 1, 3, None)
    outcome = Outcome(1, 1, JobState.SUCCEEDED, result_json='{"card":"xxxx","ok":true}')
    start = time.perf_counter()
    for _ in range(n):
        open_claimed(keys, job)
        seal_outcome(keys, outcome)
    print(f"per job in the worker (open the arguments, seal the result): "
          f"{(time.perf_counter() - start) / n * 1e6:.1f} µs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--engine", default="all", choices=["sqlite", "postgres", "all"])
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()
    keys = Keys({"bench": Keys.generate()})
    per_value(keys)
    if args.engine in ("sqlite", "all"):
        with tempfile.TemporaryDirectory() as tmp:
            app = App(f"sqlite:///{tmp}/bench.db", encryption=keys)
            run("sqlite  ", app, args.jobs, args.rounds, args.concurrency)
            app.close()
    if args.engine in ("postgres", "all"):
        app = App(args.pg, schema=f"bench_{uuid.uuid4().hex[:8]}", encryption=keys)
        try:
            run("postgres", app, args.jobs, args.rounds, args.concurrency)
        finally:
            app.store.drop_schema()  # type: ignore[attr-defined]
            app.close()


if __name__ == "__main__":
    main()
