"""The soak benchmark's producer process: bulk enqueues in small batches on a fixed
schedule (``python -m benchmarks.soak_producer``, started by benchmarks/soak.py).

Every tick (50 ms) it owes ``rate * tick`` jobs, split over the queues by their shares
(fractions carried to the next tick), one ``enqueue_many`` per queue. It never drops what
it owes: when an enqueue is slow it falls behind its schedule and catches up after, and
how far behind it is is what it reports. Env: those of benchmarks/soak_app.py and
BENCH_RATE (jobs/s), BENCH_STATE (a JSON file rewritten twice a second: jobs enqueued,
seconds behind schedule now and at worst since the last write)."""

from __future__ import annotations

import json
import os
import signal
import time

TICK = 0.05


def main() -> None:
    from .soak_app import app, parse_mix, task_name

    rate = float(os.environ["BENCH_RATE"])
    state_path = os.environ["BENCH_STATE"]
    mix = parse_mix(os.environ["BENCH_MIX"])
    tasks = [(app.tasks[task_name(s.name)], s.share) for s in mix]
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    owed = [0.0] * len(tasks)
    enqueued, ticks, worst = 0, 0, 0.0
    started = time.perf_counter()
    written = started

    def write(behind: float) -> None:
        with open(state_path + ".tmp", "w") as f:
            json.dump({"enqueued": enqueued, "behind_s": round(behind, 3),
                       "max_behind_s": round(worst, 3), "at": time.time()}, f)
        os.replace(state_path + ".tmp", state_path)

    while not stopping:
        ticks += 1
        for i, (task, share) in enumerate(tasks):
            owed[i] += rate * TICK * share
            count = int(owed[i])
            if count:
                task.enqueue_many([()] * count)
                owed[i] -= count
                enqueued += count
        now = time.perf_counter()
        behind = now - (started + ticks * TICK)
        worst = max(worst, behind)
        if now - written >= 0.5:
            write(max(behind, 0.0))
            written, worst = now, 0.0
        if behind < 0:
            time.sleep(-behind)
    write(0.0)
    app.close()


if __name__ == "__main__":
    main()
