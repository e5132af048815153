"""``python -m benchmarks.workflows``: ours and DBOS Transact, figure by figure.

Each figure runs ours, then DBOS, back to back (the machine is shared: the load average
is printed with every pair), each in its own fresh schema of the same Postgres database,
dropped afterwards. Prints a Markdown table (the one in docs/performance.md).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import psycopg

from .common import PG

ROOT = Path(__file__).resolve().parents[2]
#: (label, figure, extra arguments, result key, higher is better)
FIGURES: list[tuple[str, str, list[str], str, bool]] = [
    ("workflows/s, 10 no-op steps, 1 worker process", "throughput",
     ["--workers", "1", "-n", "300"], "workflows_per_s", True),
    ("workflows/s, 10 no-op steps, 2 worker processes", "throughput",
     ["--workers", "2", "-n", "300"], "workflows_per_s", True),
    ("step overhead, median ms per step", "steps", ["-n", "1000"], "step_ms", False),
    ("start to first step, median ms", "latency", ["-n", "30"], "first_step_ms", False),
    ("resume, 1,000 recorded steps, ms", "resume", ["-n", "1000"], "resume_1000_ms", False),
    ("resume, 10,000 recorded steps, ms", "resume", ["-n", "10000"], "resume_10000_ms",
     False),
]


def side(python: str, module: str, figure: str, extra: list[str]) -> dict[str, Any]:
    schema = f"wfb_{uuid.uuid4().hex[:10]}"
    env = {**os.environ, "WF_BENCH_SCHEMA": schema,
           "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}
    try:
        out = subprocess.run([python, "-m", module, figure, *extra], env=env, cwd=ROOT,
                             capture_output=True, text=True, timeout=1800)
    finally:
        with psycopg.connect(PG, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    for line in out.stdout.splitlines():
        if line.startswith("result "):
            return dict(json.loads(line[len("result "):]))
    raise RuntimeError(f"{module} {figure} failed:\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--peer-python", default=os.environ.get(
        "SHIFTWORK_BENCH_PEER_PYTHON", "/work/bench-venv/bin/python"),
        help="a Python with the bench extra (dbos) installed")
    parser.add_argument("--only", default="", help="comma-separated figure names to run")
    args = parser.parse_args()
    only = {f for f in args.only.split(",") if f}
    print("| figure | shiftwork | DBOS | shiftwork vs DBOS | load (1 min) |")
    print("|---|---|---|---|---|")
    for label, figure, extra, key, higher in FIGURES:
        if only and figure not in only:
            continue
        ours = side(sys.executable, "benchmarks.workflows.ours", figure, extra)[key]
        peer = side(args.peer_python, "benchmarks.workflows.dbos_peer", figure, extra)[key]
        ratio = ours / peer if higher else peer / ours
        print(f"| {label} | {ours:.2f} | {peer:.2f} | {ratio:.1f}x "
              f"{'better' if ratio >= 1 else 'worse'} | {os.getloadavg()[0]:.1f} |",
              flush=True)


if __name__ == "__main__":
    main()
