"""The peers (PgQueuer, awa-pg, chancy, Oban for Python, procrastinate, DBOS, Celery), run in
their own virtualenv.

They are not shiftwork's dependencies: install the ``bench`` extra into a separate
virtualenv and point ``--peer-python`` at it. The runner (``benchmarks.peers.run``)
prints ``progress <fraction> <text>`` lines and a final ``result <json>`` line.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from typing import Any

from ..common import PG_DSN, REDIS_URL, ROOT


def run_peer(name: str, python: str, drain_jobs: int, concurrency: int, calls: int, bulk: int,
             latency_count: int, progress: Callable[[float, str], None], repeat: int = 3,
             workloads: str = "drain,enqueue,latency") -> dict[str, Any]:
    if not os.path.exists(python):
        return {"error": f"no peer Python at {python}: create a virtualenv with the bench extra"}
    cmd = [python, "-m", "benchmarks.peers.run", name, "--drain-jobs", str(drain_jobs),
           "--concurrency", str(concurrency), "--calls", str(calls), "--bulk", str(bulk),
           "--latency-count", str(latency_count), "--repeat", str(repeat),
           "--workloads", workloads]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SHIFTWORK_BENCH_PG": PG_DSN,
           "SHIFTWORK_BENCH_REDIS": REDIS_URL}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    result: dict[str, Any] = {}
    tail: list[str] = []
    for line in proc.stdout:
        if line.startswith("progress "):
            _, frac, text = line.rstrip("\n").split(" ", 2)
            progress(float(frac), text)
        elif line.startswith("result "):
            result = json.loads(line[len("result "):])
        else:
            tail = [*tail[-20:], line.rstrip()]
    proc.wait()
    if not result:
        return {"error": f"runner exited {proc.returncode}: " + " | ".join(tail[-5:])}
    return result
