"""Every benchmark still runs: each entry point under benchmarks/, at a size that takes
seconds, exits 0 (on both engines where that costs little; on one where a second engine
would mean a second worker process or a second slow figure).

A refactor that breaks a benchmark is found here, not by whoever next measures: four had
stopped running unnoticed (a SQLite file no longer made on first use, a JobContext given
the App instead of its Runtime, a claim filter moved into a server function, a bulk row in
the arguments' old shape). Figures are not checked: speed is reported in docs, never
asserted. Not run here: the peers (they need the `bench` extra's packages),
profile_drain (py-spy, from the same extra), and the soak's own run (minutes; its parts
are tests/test_bench_soak.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest

from .conftest import PG_DSN, require_pg

ROOT = Path(__file__).resolve().parents[1]

#: name -> the arguments after `python`; {pg} is the test server's DSN, {tmp} a folder
RUNS: dict[str, list[str]] = {
    "batching": ["benchmarks/batching.py", "--jobs", "200", "--engine", "all", "--pg", "{pg}"],
    "checkpoint": ["benchmarks/checkpoint.py", "--n", "30", "--pg", "{pg}"],
    "children": ["-m", "benchmarks.children", "16", "1"],
    # its result-latency and graph figures have fixed sizes: 17 s on PostgreSQL in the suite
    "composition": ["-m", "benchmarks.composition", "--engine", "sqlite", "--n", "20",
                    "--rounds", "1"],
    "console": ["-m", "benchmarks.console", "--jobs", "2000", "--dead", "200", "--pages", "1",
                "--retries", "1"],
    "encryption": ["benchmarks/encryption.py", "--jobs", "200", "--rounds", "1",
                   "--engine", "all", "--pg", "{pg}"],
    "fleet": ["-m", "benchmarks.fleet", "--processes", "1", "--jobs", "500",
              "--modes", "direct", "--no-handover", "--idle-seconds", "1",
              "--results-dir", "{tmp}"],
    "flow": ["-m", "benchmarks.flow", "--engine", "postgres", "--jobs", "100", "--flood", "200",
             "--accuracy", "1", "--repeat", "1", "--only", "noisy,claim,accuracy"],
    "heartbeat": ["-m", "benchmarks.heartbeat", "--jobs", "20", "--n", "5", "--pg", "{pg}"],
    "history_pages": ["benchmarks/history_pages.py", "--engine", "all", "--workflows", "3",
                      "--steps", "5", "--occurrences", "10", "--runs", "1"],
    "memory_ceiling": ["benchmarks/memory_ceiling.py", "--jobs", "3", "--rounds", "1"],
    "metrics_scrape": ["benchmarks/metrics_scrape.py", "--dsn", "{pg}", "--finished", "1000",
                       "--backlog", "100", "--runs", "1"],
    "orphans": ["-m", "benchmarks.orphans", "--runs", "1", "--lease", "2", "--pg", "{pg}",
                "--engines", "postgres"],
    "partition_convert": ["-m", "benchmarks.partition_convert", "--finished", "2000",
                          "--waiting", "100"],
    "retention": ["-m", "benchmarks.retention", "--finished", "2000",
                  "--engines", "postgres,postgres-partitioned,sqlite", "--claims", "20"],
    "run --quick": ["-m", "benchmarks", "run", "--quick", "--engine", "postgres",
                    "--workload", "drain", "--drain-jobs", "200", "--repeat", "1",
                    "--results-dir", "{tmp}"],
    "schedules": ["-m", "benchmarks.schedules", "--counts", "20", "--engines", "postgres"],
    "sqlite_ceiling": ["benchmarks/sqlite_ceiling.py", "--n", "500", "--rounds", "1"],
    "talk": ["-m", "benchmarks.talk", "5"],
    "workflow_streams latency": ["benchmarks/workflow_streams.py", "latency",
                                 "--engine", "sqlite", "-n", "20"],
    "workflow_streams loop": ["benchmarks/workflow_streams.py", "loop", "--engine", "postgres",
                              "-n", "100", "--pg", "{pg}"],
    "workflows throughput": ["-m", "benchmarks.workflows.ours", "throughput",
                             "--workers", "1", "-n", "5"],
    "workflows steps": ["-m", "benchmarks.workflows.ours", "steps", "-n", "20"],
    "workflows latency": ["-m", "benchmarks.workflows.ours", "latency", "-n", "5"],
    "workflows resume": ["-m", "benchmarks.workflows.ours", "resume", "-n", "2"],
}


@pytest.mark.fault  # the slow tier: each starts a process, most start workers of their own
@pytest.mark.parametrize("name", list(RUNS))
def test_the_benchmark_runs(name: str, tmp_path: Path) -> None:
    require_pg()
    args = [str(ROOT / a) if a.endswith(".py") else a.format(pg=PG_DSN, tmp=tmp_path)
            for a in RUNS[name]]
    schema = f"wf_bench_{uuid.uuid4().hex[:10]}"  # the workflow figures' (ours.py), dropped here
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
           "SHIFTWORK_BENCH_PG": PG_DSN, "WF_BENCH_SCHEMA": schema}
    try:
        run = subprocess.run([sys.executable, *args], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=170)
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    assert run.returncode == 0, f"{args}\n{run.stdout[-3000:]}\n{run.stderr[-5000:]}"
    assert run.stdout.strip(), f"{args} printed nothing"
