"""Fleet benchmark: 1 to 64 worker processes (small pools each) draining one backlog,
straight to PostgreSQL and through PgBouncer in transaction mode.

    .venv/bin/python -m benchmarks.fleet [--processes 1,8,32,64] [--jobs 200000]
                                         [--modes direct,pgbouncer] [--concurrency 10]

Runs on a throwaway cluster of its own (tests/faults/pgcluster.py: fsync on,
max_connections 400, pg_stat_statements preloaded) so a 64-process fleet does not
exhaust the shared server, and every statement is counted by the server. Per run: the
backlog is COPYed into a paused queue and ANALYZEd, the workers start and register, the
statement counters are reset, the queue is resumed and the drain timed. Reported per run:
jobs/s, claims and empty claims per job (counted in each worker), statements per job by
kind (pg_stat_statements), heartbeat / rescue / leader statements per second, lock waits
(pg_stat_activity sampled every 0.25 s), connections held (server backends, and at
PgBouncer its clients), and the leader hand-over time after SIGKILL of the leader's
process. Writes benchmarks/results/fleet-<time>.json and prints a table.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import click
import psycopg

from .common import ROOT, load, spawn, stop, wait_until

RESULTS = Path(__file__).resolve().parent / "results"

# Statement kinds, by the named query each pg_stat_statements entry starts like.
KINDS = {"claim": "jobs_claim", "complete": "jobs_complete_many",
         "heartbeat": "jobs_heartbeat", "rescue": "jobs_rescue", "leader": "leader_acquire",
         "roster": "workers_list", "throughput": "queue_minutes_add"}


def _prefix(text: str) -> str:
    """A query's text up to its first parameter, placeholder or constant (what
    pg_stat_statements shows unchanged), whitespace-normalized."""
    cut = min([i for i in (text.find("%("), text.find("{"), text.find("'")) if i >= 0]
              or [len(text)])
    return " ".join(text[:cut].split())[:200]


class Sampler(threading.Thread):
    """Lock waits and connections, sampled while the fleet drains."""

    def __init__(self, dsn: str, bouncer: Any | None) -> None:
        super().__init__(daemon=True)
        self.dsn, self.bouncer = dsn, bouncer
        self.stop_event = threading.Event()
        self.lock_waits: list[int] = []
        self.backends: list[int] = []
        self.clients: list[int] = []
        self.waiting_on: dict[str, int] = {}  # "wait event: statement" -> samples

    def run(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            while not self.stop_event.wait(0.25):
                row = conn.execute(
                    "SELECT count(*) FILTER (WHERE wait_event_type = 'Lock'), "
                    "count(*) FILTER (WHERE backend_type = 'client backend') - 1 "
                    "FROM pg_stat_activity WHERE datname = current_database()").fetchone()
                assert row is not None
                self.lock_waits.append(int(row[0]))
                for event, query in conn.execute(
                        "SELECT wait_event, query FROM pg_stat_activity "
                        "WHERE wait_event_type = 'Lock' AND datname = current_database()"):
                    key = f"{event}: {_kind_of(query)}"
                    self.waiting_on[key] = self.waiting_on.get(key, 0) + 1
                self.backends.append(int(row[1]))
                if self.bouncer is not None:
                    self.clients.append(_bouncer_clients(self.bouncer))


_PREFIXES: dict[str, str] = {}


def _kind_of(query: str) -> str:
    text = " ".join((query or "").split())
    for kind, prefix in _PREFIXES.items():
        if text.startswith(prefix):
            return kind
    return text[:60]


def _bouncer_clients(bouncer: Any) -> int:
    with psycopg.connect(bouncer.dsn("pgbouncer"), autocommit=True,
                         prepare_threshold=None) as conn:
        cur = conn.cursor()
        cur.execute("SHOW POOLS")
        names = [d.name for d in cur.description or []]
        return sum(int(r[names.index("cl_active")]) + int(r[names.index("cl_waiting")])
                   for r in cur.fetchall() if r[0] != "pgbouncer")


def _statements(dsn: str, prefixes: dict[str, str]) -> dict[str, dict[str, int]]:
    out = {kind: {"calls": 0, "rows": 0} for kind in prefixes}
    with psycopg.connect(dsn, autocommit=True) as conn:
        for query, calls, rows in conn.execute(
                "SELECT query, calls, rows FROM pg_stat_statements"):
            text = " ".join(query.split())
            for kind, prefix in prefixes.items():
                if text.startswith(prefix):
                    out[kind]["calls"] += int(calls)
                    out[kind]["rows"] += int(rows)
                    break
    return out


def _run(cluster_dsn: str, bouncer: Any | None, processes: int, jobs: int,
         concurrency: int, tmp: Path, handover: bool, idle_seconds: float
         ) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "src"))
    from shiftwork import App

    schema = f"fleet_{processes}_{'b' if bouncer else 'd'}"
    records = tmp / schema
    records.mkdir(parents=True, exist_ok=True)
    admin = App(cluster_dsn, schema=schema)
    admin.migrate()
    prefixes = {kind: _prefix(admin.store.q[name]) for kind, name in KINDS.items()}  # type: ignore[attr-defined]
    _PREFIXES.update(prefixes)
    admin.pause_queue("bench")
    admin.store.jobs.insert_stream(jobs, (_job(admin) for _ in range(jobs)))  # COPY
    with psycopg.connect(cluster_dsn, autocommit=True) as conn:
        conn.execute(f'ANALYZE "{schema}".jobs')  # as a running system's autovacuum would
    env = {"BENCH_DSN": bouncer.dsn("postgres") if bouncer else cluster_dsn,
           "BENCH_SCHEMA": schema, "BENCH_RECORD_DIR": str(records),
           "BENCH_PGBOUNCER": "1" if bouncer else "", "BENCH_LISTEN_DSN":
           cluster_dsn if bouncer else "", "BENCH_POOL_SIZE": "3"}
    cmd = [sys.executable, "-m", "shiftwork.cli", "worker", "benchmarks.fleet_app:app",
           "--log-level", "WARNING", "--grace", "5", "-q", f"bench={concurrency}"]
    procs = [spawn(cmd, env, str(records / f"worker{i}.log")) for i in range(processes)]
    result: dict[str, Any] = {"processes": processes, "via": "pgbouncer" if bouncer else "direct",
                              "jobs": jobs, "concurrency": concurrency}
    try:
        wait_until(lambda: len(admin.store.fleet.workers_list()) == processes, 300,
                   f"{processes} workers registered", interval=0.2)
        time.sleep(3)  # each has claimed once (paused: nothing) and read its roster
        with psycopg.connect(cluster_dsn, autocommit=True) as conn:
            conn.execute("SELECT pg_stat_statements_reset()")
        sampler = Sampler(cluster_dsn, bouncer)
        sampler.start()
        started = time.monotonic()
        admin.resume_queue("bench")
        wait_until(lambda: _finished(admin, schema) >= jobs, 1800, "the drain", interval=0.2)
        elapsed = time.monotonic() - started
        sampler.stop_event.set()
        sampler.join()
        counts = _statements(cluster_dsn, prefixes)
        result.update(
            seconds=round(elapsed, 2), jobs_per_s=round(jobs / elapsed),
            statements={k: v["calls"] for k, v in counts.items()},
            per_job={k: round(v["calls"] / jobs, 4) for k, v in counts.items()},
            per_s={k: round(v["calls"] / elapsed, 2) for k, v in counts.items()},
            lock_waits_mean=round(sum(sampler.lock_waits) / max(len(sampler.lock_waits), 1), 2),
            lock_waits_max=max(sampler.lock_waits, default=0),
            lock_waits_on=dict(sorted(sampler.waiting_on.items(), key=lambda kv: -kv[1])),
            backends_max=max(sampler.backends, default=0),
            bouncer_clients_max=max(sampler.clients, default=0) if bouncer else None,
            load=load())
        # Idle: what the fleet holds and does once the backlog is gone.
        time.sleep(2)
        with psycopg.connect(cluster_dsn, autocommit=True) as conn:
            conn.execute("SELECT pg_stat_statements_reset()")
        idle_started = time.monotonic()
        time.sleep(idle_seconds)
        idle = _statements(cluster_dsn, prefixes)
        idle_s = time.monotonic() - idle_started
        result["idle_per_s"] = {k: round(v["calls"] / idle_s, 2) for k, v in idle.items()}
        if handover and processes > 1:
            result["handover_s"] = _handover(admin, procs)
    finally:
        stop(procs, timeout=60)
    claims = [json.loads(p.read_text()) for p in records.glob("claims-*.json")]
    total = {k: sum(c[k] for c in claims) for k in ("claims", "empty", "jobs")}
    result["claims_per_job"] = round(total["claims"] / jobs, 4) if claims else None
    result["empty_claims_per_job"] = round(total["empty"] / jobs, 4) if claims else None
    result["claim_counts_from"] = len(claims)
    admin.store.drop_schema()  # type: ignore[attr-defined]
    admin.close()
    return result


def _job(app: Any) -> Any:
    from shiftwork.model.new_job import NewJob

    return NewJob(task="fleet.noop", queue="bench", args_json='{"args": [], "kwargs": {}}')


def _finished(app: Any, schema: str) -> int:
    return sum(s.succeeded for s in app.queue_stats() if s.queue == "bench")


def _handover(app: Any, procs: list[subprocess.Popen[bytes]]) -> float | None:
    """SIGKILL the leader's process; seconds until another worker holds the lease."""
    with psycopg.connect(app.dsn, autocommit=True) as conn:
        row = conn.execute(f'SELECT owner FROM "{app.schema}".leaders').fetchone()
        if row is None:
            return None
        owner = row[0]
        pid = int(owner.split(":")[-2])
        victim = next((p for p in procs if p.pid == pid), None)
        if victim is None:
            return None
        victim.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        while time.monotonic() - killed < 120:
            row = conn.execute(f'SELECT owner FROM "{app.schema}".leaders '
                               "WHERE expires_at > now()").fetchone()
            if row is not None and row[0] != owner:
                return round(time.monotonic() - killed, 2)
            time.sleep(0.05)
    return None


@click.command()
@click.option("--processes", default="1,8,32,64", show_default=True)
@click.option("--jobs", default=200_000, show_default=True)
@click.option("--modes", default="direct,pgbouncer", show_default=True)
@click.option("--concurrency", default=10, show_default=True,
              help="Threads per worker process.")
@click.option("--handover/--no-handover", default=True, show_default=True)
@click.option("--idle-seconds", type=click.FloatRange(min=0, min_open=True), default=10.0,
              show_default=True,
              help="How long the drained fleet's idle statements are counted.")
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path),
              default=RESULTS, show_default="benchmarks/results",
              help="Where fleet-<time>.json goes.")
def main(processes: str, jobs: int, modes: str, concurrency: int, handover: bool,
         idle_seconds: float, results_dir: Path) -> None:
    sys.path.insert(0, str(ROOT))
    from tests.faults.pgbouncer import PgBouncer
    from tests.faults.pgcluster import ThrowawayCluster

    cluster = ThrowawayCluster({"shared_preload_libraries": "pg_stat_statements",
                                "max_connections": "400", "shared_buffers": "256MB"})
    bouncer = None
    results: list[dict[str, Any]] = []
    results_dir.mkdir(parents=True, exist_ok=True)
    out = results_dir / f"fleet-{time.strftime('%Y%m%d-%H%M%S')}.json"
    try:
        with psycopg.connect(cluster.dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        if "pgbouncer" in modes:
            bouncer = PgBouncer(port=cluster.port, pool_size=20)
        for n in [int(x) for x in processes.split(",")]:
            for mode in modes.split(","):
                r = _run(cluster.dsn, bouncer if mode == "pgbouncer" else None, n, jobs,
                         concurrency, cluster.root / "runs", handover, idle_seconds)
                results.append(r)
                print(json.dumps(r), flush=True)
                out.write_text(json.dumps(results, indent=2))
    finally:
        if bouncer is not None:
            bouncer.close()
        cluster.close()
    _table(results)


def _table(results: list[dict[str, Any]]) -> None:
    head = ("procs", "via", "jobs/s", "claims/job", "empty/job", "stmts/job", "lock waits",
            "backends", "hb/s", "rescue/s", "handover s")
    print(" | ".join(head))
    for r in results:
        per_job = sum(r["per_job"].values())
        print(" | ".join(str(x) for x in (
            r["processes"], r["via"], r["jobs_per_s"], r["claims_per_job"],
            r["empty_claims_per_job"], round(per_job, 3),
            f"{r['lock_waits_mean']} (max {r['lock_waits_max']})", r["backends_max"],
            r["per_s"]["heartbeat"], r["per_s"]["rescue"], r.get("handover_s", "-"))))


if __name__ == "__main__":
    main()
