"""Run drain, enqueue and latency for one peer: ``python -m benchmarks.peers.run NAME``.

Runs inside the peers' virtualenv; prints ``progress`` lines and one ``result`` line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Any

import psycopg

from ..recorder import read_all, starts

PG = os.environ.get("SHIFTWORK_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/test")
REDIS = os.environ.get("SHIFTWORK_BENCH_REDIS", "redis://127.0.0.1:6379/9")


def say(frac: float, text: str) -> None:
    print(f"progress {frac:.3f} {text}", flush=True)


def load() -> str:
    a, b, c = os.getloadavg()
    return f"{a:.2f} {b:.2f} {c:.2f}"


def pct(values: list[float]) -> dict[str, Any]:
    s = sorted(values)
    if not s:
        return {"n": 0}

    def pick(q: float) -> float:
        return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]

    return {"n": len(s), "p50": pick(0.5), "p95": pick(0.95), "p99": pick(0.99), "max": s[-1]}


def wait_until(pred: Any, timeout: float, what: str, interval: float = 0.005) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(interval)


def count_rows(conn: Any, sql: str) -> int:
    """The one number a ``SELECT count(*) ...`` returns (a peer's jobs not yet finished)."""
    row = conn.execute(sql).fetchone()
    return int(row[0]) if row else 0


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


class Peer:
    """One system under test: how to enqueue, run workers, and tell when it is done."""

    def __init__(self, schema: str, tmp: str) -> None:
        self.schema = schema
        self.tmp = tmp
        self.record_dir = ""
        self.expected = 0  # the jobs the current drain enqueued (a peer without a count)
        self.db = psycopg.connect(PG, autocommit=True)

    def env(self) -> dict[str, str]:
        return {**os.environ, "BENCH_SCHEMA": self.schema, "BENCH_RECORD_DIR": self.record_dir,
                "SHIFTWORK_BENCH_PG": PG, "SHIFTWORK_BENCH_REDIS": REDIS}

    def fresh(self, label: str) -> None:
        self.record_dir = os.path.join(self.tmp, label)
        os.makedirs(self.record_dir)
        os.environ["BENCH_RECORD_DIR"] = self.record_dir

    def spawn(self, cmd: list[str], label: str) -> subprocess.Popen[bytes]:
        log = open(os.path.join(self.tmp, f"{label}.log"), "ab")  # noqa: SIM115
        return subprocess.Popen(cmd, env=self.env(), stdout=log, stderr=subprocess.STDOUT)

    # to fill in
    def setup(self) -> None: ...
    def reset(self) -> None: ...
    def enqueue_bulk(self, n: int) -> None: ...
    def enqueue_one(self) -> None: ...
    def enqueue_stamp(self) -> None: ...
    def worker(self, concurrency: int, queue: str, label: str) -> subprocess.Popen[bytes]:
        raise NotImplementedError
    def remaining(self) -> int:
        raise NotImplementedError
    def teardown(self) -> None: ...

    def analyze(self) -> None:
        """Statistics after a bulk load, as autovacuum soon gives a running system; every
        Postgres system gets it (without it procrastinate drained 56-148 jobs/s)."""
        if os.environ.get("BENCH_ANALYZE", "1") == "0":  # to measure without (as ours)
            return
        for table in self.tables:
            self.db.execute(f'ANALYZE "{self.schema}".{table}')

    tables: tuple[str, ...] = ()

    def config(self) -> dict[str, Any]:
        """The settings this peer runs with, written into the result."""
        return {}


class Procrastinate(Peer):
    tables = ("procrastinate_jobs",)

    def config(self) -> dict[str, Any]:
        return {"connector": "PsycopgConnector", "tasks": "async",
                "worker": "procrastinate worker -c <concurrency>", "other": "defaults"}

    def setup(self) -> None:
        self.db.execute(f'CREATE SCHEMA "{self.schema}"')
        os.environ["BENCH_SCHEMA"] = self.schema
        from .procrastinate_app import app, noop, stamp

        self.app, self.noop, self.stamp = app, noop, stamp
        self.app.open()
        self.app.schema_manager.apply_schema()

    def reset(self) -> None:
        self.db.execute(f'TRUNCATE "{self.schema}".procrastinate_jobs CASCADE')

    def enqueue_bulk(self, n: int) -> None:
        for i in range(0, n, 5000):
            self.noop.batch_defer(*([{}] * min(5000, n - i)))

    def enqueue_one(self) -> None:
        self.noop.defer()

    def enqueue_stamp(self) -> None:
        self.stamp.defer(sent=time.time())

    def worker(self, concurrency: int, queue: str, label: str) -> subprocess.Popen[bytes]:
        return self.spawn([sys.executable, "-m", "procrastinate", "--app",
                           "benchmarks.peers.procrastinate_app.app", "worker", "-q", queue,
                           "-c", str(concurrency)], label)

    def remaining(self) -> int:
        return count_rows(self.db, f'SELECT count(*) FROM "{self.schema}".procrastinate_jobs '
                          "WHERE status IN ('todo', 'doing')")

    def teardown(self) -> None:
        self.app.close()
        self.db.execute(f'DROP SCHEMA "{self.schema}" CASCADE')


class PgQueuerPeer(Peer):
    """PgQueuer at its best documented configuration: ``batch_size`` 50 and
    ``max_concurrent_tasks`` left at its default (no cap: a cap adds a per-worker budget
    to every dequeue and, at twice the batch, leaves the worker waiting on its last
    jobs before it fetches more). Both are settable for comparison."""

    tables = ("pgqueuer",)
    batch_size = int(os.environ.get("BENCH_PGQUEUER_BATCH", "50"))
    max_concurrent = int(os.environ.get("BENCH_PGQUEUER_MAX_CONCURRENT", "0"))  # 0: none

    def config(self) -> dict[str, Any]:
        return {"batch_size": self.batch_size,
                "max_concurrent_tasks": self.max_concurrent or "default (none)"}

    def setup(self) -> None:
        self.db.execute(f'CREATE SCHEMA "{self.schema}"')
        subprocess.run([sys.executable, "-m", "pgqueuer", "--pg-dsn", PG, "--schema",
                        self.schema, "install"], check=True, env=self.env(),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import asyncpg
        from pgqueuer import AsyncpgDriver, Queries

        self.loop = asyncio.new_event_loop()
        conn = self.loop.run_until_complete(asyncpg.connect(PG, server_settings={
            "search_path": self.schema}))
        self.conn = conn
        self.q = Queries(AsyncpgDriver(conn))

    def reset(self) -> None:
        self.db.execute(f'TRUNCATE "{self.schema}".pgqueuer')

    def enqueue_bulk(self, n: int) -> None:
        for i in range(0, n, 5000):
            k = min(5000, n - i)
            self.loop.run_until_complete(self.q.enqueue(["noop"] * k, [None] * k, [0] * k))

    def enqueue_one(self) -> None:
        self.loop.run_until_complete(self.q.enqueue("noop", None))

    def enqueue_stamp(self) -> None:
        self.loop.run_until_complete(self.q.enqueue("stamp", str(time.time()).encode()))

    def worker(self, concurrency: int, queue: str, label: str) -> subprocess.Popen[bytes]:
        # The drain's own settings; the latency run keeps the slots it is given.
        batch, cap = ((self.batch_size, self.max_concurrent) if queue == "bench"
                      else (max(1, concurrency // 2), concurrency))
        return self.spawn([sys.executable, "-m", "benchmarks.peers.pgqueuer_app",
                           str(batch), str(cap)], label)

    def remaining(self) -> int:
        return count_rows(self.db, f'SELECT count(*) FROM "{self.schema}".pgqueuer')


    def teardown(self) -> None:
        self.loop.run_until_complete(self.conn.close())
        self.db.execute(f'DROP SCHEMA "{self.schema}" CASCADE')


class CeleryPeer(Peer):
    def config(self) -> dict[str, Any]:
        return {"broker": "Redis", "result_backend": "none (task_ignore_result)",
                "pool": "threads -c <concurrency>",
                "worker": "--without-gossip --without-mingle --without-heartbeat",
                "durable": "no database commit per job (a Redis broker)"}

    def setup(self) -> None:
        from .celery_app import app, noop, stamp

        self.app, self.noop, self.stamp = app, noop, stamp
        self.queue = self.schema

    def reset(self) -> None:
        self.queue = f"{self.schema}_{uuid.uuid4().hex[:6]}"

    def enqueue_bulk(self, n: int) -> None:
        # Celery has no bulk call: one publish per job.
        for _ in range(n):
            self.noop.apply_async(queue=self.queue)

    def enqueue_one(self) -> None:
        self.noop.apply_async(queue=self.queue)

    def enqueue_stamp(self) -> None:
        self.stamp.apply_async((time.time(),), queue=self.queue)

    def worker(self, concurrency: int, queue: str, label: str) -> subprocess.Popen[bytes]:
        return self.spawn([sys.executable, "-m", "celery", "-A", "benchmarks.peers.celery_app",
                           "worker", "-P", "threads", "-c", str(concurrency), "-Q", self.queue,
                           "-n", f"{label}@%h", "--loglevel", "WARNING", "--without-gossip",
                           "--without-mingle", "--without-heartbeat"], label)

    def remaining(self) -> int:
        return self.expected - sum(1 for r in read_all(self.record_dir) if r[0] == "d")


    def teardown(self) -> None:
        import redis

        r = redis.Redis.from_url(REDIS)
        for key in r.scan_iter(f"{self.schema}*"):
            r.delete(key)


PEERS: dict[str, type[Peer]] = {"procrastinate": Procrastinate, "pgqueuer": PgQueuerPeer,
                                "celery": CeleryPeer}
# The newer peers, each in a module of its own (imported only when chosen).
LATER = {"oban": "oban_peer", "chancy": "chancy_peer", "awa": "awa_peer", "dbos": "dbos_peer"}


def peer_class(name: str) -> type[Peer]:
    if name in PEERS:
        return PEERS[name]
    import importlib

    return importlib.import_module(f".{LATER[name]}", __package__).Peer  # type: ignore[no-any-return]


def drain(peer: Peer, n: int, workers: int, concurrency: int, base: float,
          label: str) -> dict[str, Any]:
    peer.reset()
    peer.fresh(label)
    peer.expected = n
    peer.enqueue_bulk(n)
    peer.analyze()
    before = load()
    t_start = time.time()
    procs = [peer.worker(concurrency, "bench", f"{label}-w{i}") for i in range(workers)]
    try:
        def check() -> bool:
            for p in procs:
                if p.poll() is not None:
                    raise RuntimeError(f"worker exited with {p.returncode}")
            left = peer.remaining()
            say(base + 0.15 * (1 - left / n), f"drain {workers}w {n - left:,}/{n:,}")
            return left == 0

        wait_until(check, 900, "the drain", 0.005)
        end = time.time()
        time.sleep(0.5)  # the last records reach their files
    finally:
        stop(procs)
    seen, span = starts(peer.record_dir)
    distinct, repeated = len(seen), sum(1 for c in seen.values() if c > 1)
    verified = distinct == n and repeated == 0
    return {"jobs_per_s": n / span if span else 0.0, "seconds": span, "n": n,
            "workers": workers, "concurrency": concurrency, "verified": verified,
            "lost": n - distinct, "repeated": repeated, "load": before,
            "wall_seconds": end - t_start}


def drain_repeated(peer: Peer, n: int, workers: int, concurrency: int, base: float,
                   repeat: int) -> dict[str, Any]:
    """The median of ``repeat`` drains, as shiftwork's figure is (every run kept)."""
    runs = [drain(peer, n, workers, concurrency, base, f"drain{workers}-{i}")
            for i in range(repeat)]
    ranked = sorted(runs, key=lambda r: r["jobs_per_s"])
    median = dict(ranked[len(ranked) // 2])
    median["runs"] = [round(r["jobs_per_s"]) for r in runs]
    median["verified"] = all(r["verified"] for r in runs)
    return median


def enqueue(peer: Peer, calls: int, bulk: int) -> dict[str, Any]:
    peer.reset()
    peer.fresh("enqueue")
    peer.enqueue_one()
    before = load()
    t0 = time.perf_counter()
    for i in range(calls):
        peer.enqueue_one()
        if i % 200 == 0:
            say(0.3 + 0.2 * i / calls, f"one-by-one {i:,}/{calls:,}")
    one = calls / (time.perf_counter() - t0)
    say(0.5, "bulk")
    if isinstance(peer, CeleryPeer):
        bulk = min(bulk, 20_000)  # no bulk call: a publish per job, so fewer of them
    t0 = time.perf_counter()
    peer.enqueue_bulk(bulk)
    bulk_rate = bulk / (time.perf_counter() - t0)
    return {"one_by_one_per_s": one, "bulk_jobs_per_s": bulk_rate, "calls": calls,
            "bulk": bulk, "load": before}


def latency(peer: Peer, count: int) -> dict[str, Any]:
    peer.reset()
    peer.fresh("latency")
    proc = peer.worker(10, "urgent", "latency")
    try:
        time.sleep(3.0)  # started and listening
        before = load()
        nxt = time.perf_counter()
        for i in range(count):
            peer.enqueue_stamp()
            nxt += 0.020
            if i % 25 == 0:
                say(0.7 + 0.3 * i / count, f"latency {i}/{count}")
            delay = nxt - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
        wait_until(lambda: sum(1 for r in read_all(peer.record_dir) if r[0] == "l") >= count,
                   60, "latency jobs", 0.05)
    finally:
        stop([proc])
    lat = [float(r[2]) for r in read_all(peer.record_dir) if r[0] == "l"]
    return {**pct(lat), "load": before, "samples": [round(v, 3) for v in lat]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("peer", choices=sorted([*PEERS, *LATER]))
    ap.add_argument("--drain-jobs", type=int, default=20_000)
    ap.add_argument("--concurrency", type=int, default=50)
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--bulk", type=int, default=100_000)
    ap.add_argument("--latency-count", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workloads", default="drain,enqueue,latency")
    a = ap.parse_args()
    chosen = a.workloads.split(",")
    tmp = tempfile.mkdtemp(prefix=f"shiftwork-bench-{a.peer}-")
    peer = peer_class(a.peer)(f"bench_{a.peer}_{uuid.uuid4().hex[:8]}", tmp)
    out: dict[str, Any] = {}
    import importlib.metadata as md

    out["version"] = md.version({"awa": "awa-pg"}.get(a.peer, a.peer))
    out["config"] = peer.config()
    peer.setup()
    try:
        for k, base in ((1, 0.0), (2, 0.15)):
            if "drain" not in chosen:
                break
            try:
                out[f"drain-{k}w"] = drain_repeated(peer, a.drain_jobs, k, a.concurrency, base,
                                                    a.repeat)
            except Exception as exc:
                out[f"drain-{k}w"] = {"error": f"{type(exc).__name__}: {exc}"}
        for name, fn in (("enqueue", lambda: enqueue(peer, a.calls, a.bulk)),
                         ("latency", lambda: latency(peer, a.latency_count))):
            if name not in chosen:
                continue
            try:
                out[name] = fn()
            except Exception as exc:
                out[name] = {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        peer.teardown()
        subprocess.run(["rm", "-rf", tmp], check=False)
    print("result " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
