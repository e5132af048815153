"""Shared pieces: throwaway databases, worker processes, percentiles, machine facts."""

from __future__ import annotations

import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PG_DSN = os.environ.get("SHIFTWORK_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("SHIFTWORK_BENCH_REDIS", "redis://127.0.0.1:6379/9")


@dataclass
class Place:
    """Where one run's jobs live: a fresh Postgres schema or a fresh SQLite file."""

    engine: str
    dsn: str
    schema: str
    tmp: str  # scratch folder: SQLite file, record files
    record_dir: str = field(default="")
    async_jobs: bool = False  # the drain's job as a coroutine (benchmarks/app.py)

    def env(self) -> dict[str, str]:
        return {"BENCH_DSN": self.dsn, "BENCH_SCHEMA": self.schema,
                "BENCH_RECORD_DIR": self.record_dir,
                "BENCH_ASYNC": "1" if self.async_jobs else "0"}


@contextmanager
def place(engine: str) -> Iterator[Place]:
    tmp = tempfile.mkdtemp(prefix="shiftwork-bench-")
    rec = os.path.join(tmp, "records")
    os.mkdir(rec)
    schema = f"bench_{uuid.uuid4().hex[:10]}"
    if engine == "sqlite":
        p = Place(engine, f"sqlite:///{tmp}/jobs.db", "shiftwork", tmp, rec)
    else:
        p = Place(engine, PG_DSN, schema, tmp, rec)
    try:
        yield p
    finally:
        if engine != "sqlite":
            import psycopg

            with psycopg.connect(PG_DSN, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        subprocess.run(["rm", "-rf", tmp], check=False)


def spawn(cmd: list[str], env: dict[str, str], log: str) -> subprocess.Popen[bytes]:
    full = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}", **env}
    out = open(log, "ab")  # noqa: SIM115
    return subprocess.Popen(cmd, cwd=ROOT, env=full, stdout=out, stderr=subprocess.STDOUT)


def stop(procs: list[subprocess.Popen[bytes]], timeout: float = 30.0) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for p in procs:
        try:
            p.wait(max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def shiftwork_worker(pl: Place, queues: dict[str, int], log_name: str = "worker",
                     processes: int = 1) -> subprocess.Popen[bytes]:
    """One ``shiftwork worker``; with ``processes`` > 1, one supervisor of that many."""
    cmd = [sys.executable, "-m", "shiftwork.cli", "worker", "benchmarks.app:app",
           "--log-level", "WARNING", "--grace", "5"]
    if processes > 1:
        cmd += ["--processes", str(processes)]
    for q, c in queues.items():
        cmd += ["-q", f"{q}={c}"]
    return spawn(cmd, pl.env(), os.path.join(pl.tmp, f"{log_name}.log"))


def wait_until(predicate: Callable[[], Any], timeout: float, what: str,
               interval: float = 0.01) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise RuntimeError(f"benchmark timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"n": 0}
    s = sorted(values)

    def pick(q: float) -> float:
        return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]

    return {"n": len(s), "p50": pick(0.50), "p95": pick(0.95), "p99": pick(0.99),
            "max": s[-1]}


def load() -> str:
    a, b, c = os.getloadavg()
    return f"{a:.2f} {b:.2f} {c:.2f}"


def rss_kib(pid: int, key: str = "VmHWM") -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def machine() -> dict[str, Any]:
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = rss_kib(1, "VmRSS")
    del mem
    total = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                total = int(line.split()[1]) // 1024
    pg = "?"
    try:
        import psycopg

        with psycopg.connect(PG_DSN) as c:
            row = c.execute("SELECT current_setting('server_version'), "
                            "current_setting('fsync'), current_setting('synchronous_commit')"
                            ).fetchone()
            if row:
                pg = f"PostgreSQL {row[0]} (fsync={row[1]}, synchronous_commit={row[2]})"
    except Exception as exc:
        pg = f"unreachable: {exc}"
    import sqlite3

    return {"cpus": os.cpu_count(), "cpu": cpu, "memory_mb": total,
            "python": platform.python_version(), "kernel": platform.release(),
            "postgres": pg, "sqlite": sqlite3.sqlite_version,
            "sqlite_sync": "WAL, synchronous=FULL"}


def settle(seconds: float = 3.0) -> None:
    """Start each workload on a quiet machine, as pgbench does: the last one's dirty pages
    written out (a 1M-job SQLite file left behind made the next workload's fsyncs several
    times slower), a Postgres CHECKPOINT (so no checkpoint's writes land in the middle of
    a latency run; skipped without the privilege), and a moment for the load to fall."""
    os.sync()
    try:
        import psycopg

        with psycopg.connect(PG_DSN, autocommit=True, connect_timeout=3) as conn:
            conn.execute("CHECKPOINT")
    except Exception:  # not reachable, or not allowed: the pause still helps
        pass
    time.sleep(seconds)
