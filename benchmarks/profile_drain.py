"""Profile one worker process draining no-op jobs on Postgres (py-spy, from the bench extra).

``python -m benchmarks.profile_drain [--jobs 300000] [--gil] [--rate 200]`` enqueues the
jobs, runs ANALYZE, starts one ``shiftwork worker`` under ``py-spy record`` and, once the
queue is empty, prints where the samples went: the functions with the most samples of
their own, and the shiftwork functions with the most samples below them. ``--gil`` keeps
only the samples of the thread holding the interpreter (what the process's Python costs);
without it, waiting threads count too.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter

from .common import Place, place, spawn, wait_until
from .ours import Probe, _app, _enqueue_noops


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=300_000)
    ap.add_argument("--concurrency", type=int, default=50)
    ap.add_argument("--gil", action="store_true")
    ap.add_argument("--rate", type=int, default=200)
    ap.add_argument("--threads", action="store_true", help="one root frame per thread")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    spy = shutil.which("py-spy") or os.path.join(os.path.dirname(sys.executable), "py-spy")
    with place("postgres") as pl:
        app = _app(pl)
        _enqueue_noops(app, a.jobs)
        app.close()
        probe = Probe(pl)
        probe.analyze()
        raw = a.out or os.path.join(pl.tmp, "profile.txt")
        proc = _spied_worker(pl, spy, raw, a)
        t0 = time.monotonic()
        wait_until(lambda: probe.remaining("bench") == 0, 900, "the drain", 0.2)
        seconds = time.monotonic() - t0
        proc.send_signal(signal.SIGINT)  # py-spy writes its file when interrupted
        proc.wait(60)
        probe.close()
        print(f"{a.jobs:,} jobs in {seconds:.1f} s under the profiler "
              f"({a.jobs / seconds:,.0f} jobs/s, load {os.getloadavg()[0]:.2f})")
        _summary(raw, a.top)


def _spied_worker(pl: Place, spy: str, raw: str, a: argparse.Namespace
                  ) -> subprocess.Popen[bytes]:
    cmd = [spy, "record", "-r", str(a.rate), "-f", "raw", "-o", raw, "--nonblocking"]
    if a.gil:
        cmd.append("--gil")
    if a.threads:
        cmd.append("--threads")
    cmd += ["--", sys.executable, "-m", "shiftwork.cli", "worker", "benchmarks.app:app",
            "--log-level", "WARNING", "--grace", "5", "-q", f"bench={a.concurrency}"]
    return spawn(cmd, pl.env(), os.path.join(pl.tmp, "worker.log"))


def _summary(raw: str, top: int) -> None:
    """Own samples per function, and inclusive samples per shiftwork function."""
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    with open(raw) as f:
        for line in f:
            stack, _, count = line.rstrip().rpartition(" ")
            if not stack:
                continue
            n = int(count)
            total += n
            frames = stack.split(";")
            own[frames[-1]] += n
            for frame in set(frames):
                if "shiftwork" in frame or "benchmarks" in frame:
                    inclusive[frame] += n
    print(f"\n{total:,} samples; own (top {top}):")
    for frame, n in own.most_common(top):
        print(f"{100 * n / total:5.1f}%  {frame}")
    print(f"\nshiftwork, inclusive (top {top}):")
    for frame, n in inclusive.most_common(top):
        print(f"{100 * n / total:5.1f}%  {frame}")


if __name__ == "__main__":
    main()
