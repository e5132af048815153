"""What a memory ceiling costs per job: the start of a child process.

    python -m benchmarks.memory_ceiling [--jobs 10] [--rounds 3] [--concurrency 1]

Drains ``--jobs`` no-op jobs of three tasks with an in-process worker (SQLite, a file in
a temporary folder), one queue at a time: on the thread pool (no ceiling), in a
``:process`` queue (a child per job, no ceiling) and with ``memory_limit="512MB"`` (a
child with its rlimit, its RSS sampled by the parent every 50 ms). The time per job is
from the first job's start to the last one's finish (as the jobs record them), over the
jobs; the three kinds alternate for ``--rounds`` rounds and the median is printed, so a
busy machine weighs on each alike. The difference from the thread pool is the start-up
cost per job: the child's spawn and its import of the app. A short run on purpose.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

from shiftwork import JobState


def drain(queue: str, task_name: str, jobs: int, concurrency: int, limited: bool) -> float:
    from benchmarks.memory_app import app
    from shiftwork.worker import Worker

    app.import_path = "benchmarks.memory_app:app"
    task = app.tasks[task_name]
    handles = [task.enqueue() for _ in range(jobs)]
    worker = Worker(app, {queue: concurrency},
                    process_queues={queue} if queue == "children" else set())
    thread = threading.Thread(target=worker.run, kwargs={"install_signals": False},
                              daemon=True)
    thread.start()
    last = handles[-1].id
    while app.get_job(last).state is not JobState.SUCCEEDED:
        time.sleep(0.005)
    worker.request_stop()
    thread.join(30)
    done = [app.get_job(h.id) for h in handles]
    # every job succeeded (waited for above): each has both times
    first = min(t for j in done if (t := j.attempted_at))
    end = max(t for j in done if (t := j.finished_at))
    if limited:
        peaks = [j.peak_rss or 0 for j in done]
        assert all(peaks), "a limited job's peak is recorded"
        print(f"  limited children's peak RSS: {min(peaks) / 2**20:.1f}-"
              f"{max(peaks) / 2**20:.1f} MB")
    return (end - first).total_seconds() / jobs  # type: ignore[operator]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        os.environ["BENCH_DSN"] = f"sqlite:///{Path(folder) / 'bench.db'}"
        from benchmarks.memory_app import app

        app.migrate()
        runs: dict[str, list[float]] = {"threads": [], "children": [], "limited": []}
        for _ in range(args.rounds):
            for queue, task, limited in (("threads", "mem.thread", False),
                                         ("children", "mem.process", False),
                                         ("limited", "mem.limited", True)):
                runs[queue].append(drain(queue, task, args.jobs, args.concurrency, limited))
        app.close()
        per = {queue: statistics.median(times) for queue, times in runs.items()}
        for queue, times in runs.items():
            print(f"{queue:>9}: {per[queue] * 1000:7.1f} ms per job, median of "
                  f"{', '.join(f'{t * 1000:.0f}' for t in times)} ({args.jobs} jobs a round, "
                  f"concurrency {args.concurrency})")
    print(f"start-up cost per job: :process {1000 * (per['children'] - per['threads']):.0f} ms, "
          f"memory_limit {1000 * (per['limited'] - per['threads']):.0f} ms "
          f"(the ceiling itself: {1000 * (per['limited'] - per['children']):+.0f} ms)")


if __name__ == "__main__":
    main()
