"""The online conversion to partitioned history, timed on a populated table.

    python -m benchmarks.partition_convert [--finished 10000000] [--waiting 10000]

Fills the one-table layout with ``--finished`` finished jobs (one statement, then
``VACUUM ANALYZE``) and ``--waiting`` waiting ones, then converts it
(``store.partitions.convert``) while a second thread keeps the queue working: it
enqueues a job, claims it and completes it, over and over, and records how long each
round took. Reports each step's seconds, and the slowest rounds of the queue's work
during the conversion: what a worker would have felt.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from typing import Any

from .common import load, percentiles, place
from .retention import _fill, _new


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.partition_convert")
    parser.add_argument("--finished", type=int, default=10_000_000)
    parser.add_argument("--waiting", type=int, default=10_000)
    args = parser.parse_args(argv)
    print(json.dumps(run(args.finished, args.waiting)), flush=True)


def run(finished: int, waiting: int) -> dict[str, Any]:
    from shiftwork import App
    from shiftwork.flow.claiming import claim
    from shiftwork.model.outcome import Outcome

    out: dict[str, Any] = {"finished": finished, "waiting": waiting}
    with place("postgres") as pl:
        app = App(pl.dsn, schema=pl.schema)
        try:
            app.migrate()
            t = time.perf_counter()
            _fill(app, finished)
            for start in range(0, waiting, 5000):
                app.store.jobs.insert([_new() for _ in range(min(5000, waiting - start))])
            out["fill_s"] = round(time.perf_counter() - t, 1)
            rounds: list[tuple[float, float]] = []  # (when it ended, ms)
            stop = threading.Event()

            def work() -> None:  # a worker's cycle, one job at a time
                while not stop.is_set():
                    began = time.perf_counter()
                    app.store.jobs.insert([_new()])
                    got = claim(app.store, "default", 1, "bench", 30.0, None)
                    app.store.jobs.complete_many([Outcome(j.id, j.attempt, _succeeded())
                                                  for j in got])
                    rounds.append((time.perf_counter(), (time.perf_counter() - began) * 1e3))

            steps: list[tuple[float, str]] = []
            worker = threading.Thread(target=work)
            worker.start()
            time.sleep(2.0)
            began = time.perf_counter()
            store: Any = app.store  # PostgreSQL's store: its history ranges
            store.partitions.convert(say=lambda m: steps.append((time.perf_counter(), m)))
            ended = time.perf_counter()
            time.sleep(2.0)
            stop.set()
            worker.join()
            marks = [t for t, _ in steps] + [ended]
            out["steps_s"] = {m.split(":")[0].split(" (")[0]: round(marks[i + 1] - t, 3)
                              for i, (t, m) in enumerate(steps)}
            out["convert_s"] = round(ended - began, 2)
            during = [ms for at, ms in rounds if began <= at <= ended + 0.5]
            before = [ms for at, ms in rounds if at < began]
            out["round_ms_before"] = {k: round(v, 2) for k, v in percentiles(before).items()}
            out["round_ms_during"] = {k: round(v, 2) for k, v in percentiles(during).items()}
            out["slowest_rounds_ms"] = [round(ms, 1) for ms in sorted(during)[-5:]]
            out["load"] = load()
        finally:
            app.close()
    return out


def _succeeded() -> Any:
    from shiftwork.core.states import JobState

    return JobState.SUCCEEDED


if __name__ == "__main__":
    main()
