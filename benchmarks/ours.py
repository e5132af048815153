"""The workloads, run against shiftwork on one engine."""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from collections.abc import Callable
from typing import Any

import psycopg

from shiftwork import App

from . import recorder
from .app import make_app
from .common import (
    Place,
    load,
    percentiles,
    place,
    rss_kib,
    shiftwork_worker,
    spawn,
    stop,
    wait_until,
)
from .recorder import read_all, record, starts

Progress = Callable[[float, str], None]  # fraction done, what is happening


class Probe:
    """Benchmark-side reads of the jobs table (not the library's API: the harness's own)."""

    def __init__(self, pl: Place) -> None:
        self.pl = pl
        if pl.engine == "sqlite":
            self.c: Any = sqlite3.connect(pl.dsn.split(":///", 1)[1], isolation_level=None,
                                          timeout=30)
            self.t = "jobs"
            self.w = "workers"
        else:
            self.c = psycopg.connect(pl.dsn, autocommit=True)
            # The harness's progress count must not take the CPU from what it measures:
            # a parallel count of a 200,000-row table every 100 ms (two workers forked
            # each time) put a 10 ms spike on every third urgent job of the mixed run.
            self.c.execute("SET max_parallel_workers_per_gather = 0")
            self.t = f'"{pl.schema}".jobs'
            self.w = f'"{pl.schema}".workers'

    def one(self, text: str, *args: Any) -> Any:
        if self.pl.engine == "sqlite":
            text = text.replace("%s", "?")
        return self.c.execute(text, args).fetchone()

    def remaining(self, queue: str) -> int:
        # Two counts whose conditions are those of the partial indexes (waiting jobs:
        # jobs_claim_idx; running ones: jobs_running_lease_idx): the count reads only
        # the unfinished rows, never the finished ones it would otherwise scan.
        return int(self.one(
            f"SELECT (SELECT count(*) FROM {self.t} WHERE queue = %s AND state IN "
            "('available', 'scheduled', 'retrying')) + "
            f"(SELECT count(*) FROM {self.t} WHERE queue = %s AND state = 'running')",
            queue, queue)[0])

    def workers(self) -> int:
        return int(self.one(f"SELECT count(*) FROM {self.w}")[0])

    def summary(self, queue: str) -> tuple[int, int, int, float]:
        if self.pl.engine == "sqlite":
            span = "max(finished_at) - min(attempted_at)"
            ok = "sum(state = 'succeeded')"
            once = "sum(state = 'succeeded' AND attempt = 1)"
        else:
            span = "extract(epoch FROM max(finished_at) - min(attempted_at))::float8"
            ok = "count(*) FILTER (WHERE state = 'succeeded')"
            once = "count(*) FILTER (WHERE state = 'succeeded' AND attempt = 1)"
        row = self.one(f"SELECT count(*), {ok}, {once}, {span} FROM {self.t} WHERE queue = %s",
                       queue)
        return int(row[0]), int(row[1] or 0), int(row[2] or 0), float(row[3] or 0.0)

    def ids(self, queue: str) -> list[int]:
        q = f"SELECT id FROM {self.t} WHERE queue = %s"
        if self.pl.engine == "sqlite":
            q = q.replace("%s", "?")
        return [r[0] for r in self.c.execute(q, (queue,)).fetchall()]

    def analyze(self) -> None:
        """Statistics after a bulk load, as autovacuum would soon give a running system
        (every Postgres system in the benchmark gets the same; off: BENCH_ANALYZE=0)."""
        if self.pl.engine != "sqlite" and os.environ.get("BENCH_ANALYZE", "1") != "0":
            self.c.execute(f"ANALYZE {self.t}")

    def close(self) -> None:
        self.c.close()


def _app(pl: Place) -> App:
    """The place's app, migrated; BENCH_PARTITIONED=1: with partitioned history
    (Postgres), to compare a drain on it with one on the one-table layout."""
    app = make_app(pl.dsn, pl.schema)
    app.migrate()
    if os.environ.get("BENCH_PARTITIONED") == "1" and pl.engine == "postgres":
        app.store.partitions.convert(say=lambda _: None)  # type: ignore[attr-defined]
    return app


def _enqueue_noops(app: App, n: int, progress: Progress | None = None, chunk: int = 50_000
                   ) -> float:
    task = app.tasks["bench.noop"]
    started = time.perf_counter()
    done = 0
    while done < n:
        k = min(chunk, n - done)
        task.enqueue_many([()] * k)
        done += k
        if progress:
            progress(done / n, f"enqueued {done:,}/{n:,}")
    return time.perf_counter() - started


def _wait_ready(probe: Probe, count: int) -> None:
    wait_until(lambda: probe.workers() >= count, 60, f"{count} worker(s) to register")
    time.sleep(0.5)  # LISTEN set up, producers polling


def _drain_wait(probe: Probe, queue: str, n: int, progress: Progress, procs: list[Any],
                interval: float = 0.05) -> None:
    def check() -> bool:
        for p in procs:
            if p.poll() is not None:
                raise RuntimeError(f"worker exited early with code {p.returncode}")
        left = probe.remaining(queue)
        progress(1 - left / n, f"{n - left:,}/{n:,} done")
        return left == 0

    wait_until(check, 600, "the queue to drain", interval)


def drain(engine: str, n: int, workers: int, concurrency: int, progress: Progress,
          supervised: bool = False, async_jobs: bool = False) -> dict[str, Any]:
    """``workers`` worker processes drain ``n`` no-op jobs: that many `shiftwork worker`
    commands, or with ``supervised`` one `shiftwork worker --processes <workers>`; with
    ``async_jobs`` the job is a coroutine (as the asyncio peers' jobs are)."""
    with place(engine) as pl:
        pl.async_jobs = async_jobs
        app = _app(pl)
        _enqueue_noops(app, n)
        app.close()
        probe = Probe(pl)
        probe.analyze()
        progress(0, f"starting {workers} worker process(es)")
        before = load()
        procs = ([shiftwork_worker(pl, {"bench": concurrency}, "supervisor", workers)]
                 if supervised else
                 [shiftwork_worker(pl, {"bench": concurrency}, f"w{i}")
                  for i in range(workers)])
        try:
            _drain_wait(probe, "bench", n, progress, procs, 0.1)
        finally:
            stop(procs)
        total, ok, once, db_span = probe.summary("bench")
        ids = probe.ids("bench")
        probe.close()
        time.sleep(0.3)  # the workers' last recorder lines reach their files
        # The measure every peer gets: first job start to last, from the jobs' own records.
        # The database's span (first attempted_at to last finished_at) stays as a second,
        # shiftwork-only figure.
        seen, span = starts(pl.record_dir)
        lost = sum(1 for i in ids if str(i) not in seen)
        repeated = sum(1 for c in seen.values() if c > 1)
        verified = total == n and ok == n and once == n and lost == 0 and repeated == 0 \
            and len(seen) == n
        return {"jobs_per_s": n / span if span else 0.0, "seconds": span, "n": n,
                "db_jobs_per_s": n / db_span if db_span else 0.0, "db_seconds": db_span,
                "workers": workers, "supervised": supervised, "async_jobs": async_jobs,
                "concurrency": concurrency, "verified": verified,
                "lost": lost, "repeated": repeated, "succeeded_first_attempt": once,
                "load": before}


def drain_repeated(engine: str, n: int, workers: int, concurrency: int, progress: Progress,
                   repeat: int, supervised: bool = False, async_jobs: bool = False
                   ) -> dict[str, Any]:
    """The median of ``repeat`` drains (a 20,000-job drain lasts ~1.5 s: one run is noisy);
    every run is verified, and every run's figure is kept."""
    def of_run(i: int) -> Progress:  # run i's share of the bar
        return lambda f, s: progress((i + f) / repeat, f"run {i + 1}: {s}")

    runs = [drain(engine, n, workers, concurrency, of_run(i), supervised, async_jobs)
            for i in range(repeat)]
    ranked = sorted(runs, key=lambda r: r["jobs_per_s"])
    median = dict(ranked[len(ranked) // 2])
    median["runs"] = [round(r["jobs_per_s"]) for r in runs]
    median["verified"] = all(r["verified"] for r in runs)
    return median


def enqueue(engine: str, calls: int, bulk: int, progress: Progress) -> dict[str, Any]:
    with place(engine) as pl:
        app = _app(pl)
        task = app.tasks["bench.noop"]
        task.enqueue()  # warm the connection
        before = load()
        started = time.perf_counter()
        for i in range(calls):
            task.enqueue()
            if i % 200 == 0:
                progress(i / calls / 2, f"one-by-one {i:,}/{calls:,}")
        one = calls / (time.perf_counter() - started)
        seconds = _enqueue_noops(app, bulk, lambda f, s: progress(0.5 + f / 2, "bulk " + s),
                                 chunk=bulk)
        keyed = _enqueue_keyed(app, calls, min(bulk, 20_000), progress)
        app.close()
        return {"one_by_one_per_s": one, "bulk_jobs_per_s": bulk / seconds, "calls": calls,
                "bulk": bulk, "load": before, **keyed}


def _enqueue_keyed(app: App, calls: int, bulk: int, progress: Progress) -> dict[str, Any]:
    """The cost of a unique key, per way of holding it: one-by-one calls with a new key
    each (the default partial index; unique_for's row in unique_keys), calls of one held
    key (the duplicate, what a dedup window mostly sees), and a bulk call of new keys."""
    task = app.tasks["bench.noop"]
    n = max(1, calls // 2)
    out: dict[str, Any] = {"keyed_calls": n, "keyed_bulk": bulk}
    for name, opts in (("key", {}), ("unique_for", {"unique_for": 3600})):
        started = time.perf_counter()
        for i in range(n):
            task.using(key=f"{name}-{i}", **opts).enqueue()
        out[f"{name}_one_per_s"] = n / (time.perf_counter() - started)
        started = time.perf_counter()
        for _ in range(n):
            task.using(key=f"{name}-0", **opts).enqueue()
        out[f"{name}_dup_per_s"] = n / (time.perf_counter() - started)
        requests = [task.using(key=f"{name}-bulk-{i}", **opts).call() for i in range(bulk)]
        started = time.perf_counter()
        app.enqueue_many(requests)
        out[f"{name}_bulk_jobs_per_s"] = bulk / (time.perf_counter() - started)
        progress(1.0, f"keyed ({name}) done")
    return out


def _sender(app: App, interval: float, stop_when: Callable[[], bool], count: int | None = None,
            floor: Callable[[], Any] | None = None) -> int:
    """Enqueue one stamp job every ``interval`` seconds; each carries its send time, and
    the time each enqueue call took (its durable commit) is recorded ("e" lines) where
    this process records (the mixed workload's sender process). ``floor``, a bare durable
    write without shiftwork, runs half an interval after each send ("f" lines): the same
    pacing and moments, as the control for what the machine allows."""
    task = app.tasks["bench.stamp"]
    task.enqueue(0.0)  # warm the connection; the job records nothing (sent time 0)
    if floor:
        floor()
    sent = 0
    nxt = time.perf_counter()
    while (count is None or sent < count) and not stop_when():
        started, sent_at = time.perf_counter(), time.time()
        task.enqueue(sent_at)
        record("e", (time.perf_counter() - started) * 1000.0, sent_at)
        sent += 1
        nxt += interval
        if floor:
            _sleep_until(nxt - interval / 2)
            started, at = time.perf_counter(), time.time()
            floor()
            record("f", (time.perf_counter() - started) * 1000.0, at)
        _sleep_until(nxt)
    return sent


def _sleep_until(moment: float) -> None:
    delay = moment - time.perf_counter()
    if delay > 0:
        time.sleep(delay)


def _worker_part(pl: Place, window: tuple[float, float] | None = None) -> list[float]:
    """Each stamp job's latency less its own enqueue call (matched by send time): the
    part from the committed job to its first line, which is the queue's, not the
    sender's."""
    rows = read_all(pl.record_dir)
    calls = {r[2]: float(r[1]) for r in rows if r[0] == "e"}
    out = []
    for r in rows:
        if r[0] == "l" and r[3] in calls and (
                window is None or window[0] <= float(r[3]) <= window[1]):
            out.append(float(r[2]) - calls[r[3]])
    return out


def _latencies(pl: Place, window: tuple[float, float] | None = None) -> list[float]:
    """Every stamp job's latency; with ``window`` (wall-clock start, end), only of the
    jobs sent inside it."""
    rows = [r for r in read_all(pl.record_dir) if r[0] == "l"]
    if window is not None:
        rows = [r for r in rows if window[0] <= float(r[3]) <= window[1]]
    return [float(r[2]) for r in rows]


def latency(engine: str, count: int, progress: Progress) -> dict[str, Any]:
    with place(engine) as pl:
        app = _app(pl)
        probe = Probe(pl)
        procs = [shiftwork_worker(pl, {"urgent": 10})]
        try:
            _wait_ready(probe, 1)
            before = load()
            floor = commit_floor(pl)
            state = {"i": 0}

            def tick() -> bool:
                state["i"] += 1
                if state["i"] % 25 == 0:
                    progress(state["i"] / count, f"{state['i']}/{count} sent")
                return False

            recorder.DIR = pl.record_dir  # the sender's "e" lines, as in the mixed run
            try:
                sent = _sender(app, 0.020, tick, count)
            finally:
                recorder.flush()
                recorder.DIR = ""
            wait_until(lambda: len(_latencies(pl)) >= sent, 60, "latency jobs to run", 0.05)
        finally:
            stop(procs)
        app.close()
        probe.close()
        lat = _latencies(pl)
        return {**percentiles(lat), "worker_part": percentiles(_worker_part(pl)),
                "load": before, "floor": floor, "samples": [round(v, 3) for v in lat]}


def commit_floor(pl: Place, n: int = 100, gap: float = 0.020) -> dict[str, float]:
    """The machine's own floor at the moment, paced like the latency run: p50 of a bare
    round trip and of a bare durable one-row INSERT (no shiftwork code). A pickup is two
    durable commits (the enqueue's, the claim's) and a few thread hand-offs, so this says
    how much of a latency figure is the machine's state rather than ours."""
    def p50(fn: Callable[[], Any]) -> float:
        times = []
        for _ in range(n):
            started = time.perf_counter()
            fn()
            times.append((time.perf_counter() - started) * 1000.0)
            time.sleep(gap)
        return sorted(times)[n // 2]

    if pl.engine == "sqlite":
        conn = sqlite3.connect(os.path.join(pl.tmp, "floor.db"), isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("CREATE TABLE t (x INTEGER)")
        out = {"round_trip_p50": p50(lambda: conn.execute("SELECT 1").fetchone()),
               "durable_insert_p50": p50(lambda: conn.execute("INSERT INTO t VALUES (1)"))}
        conn.close()
        return out
    with psycopg.connect(pl.dsn, autocommit=True) as pg:
        pg.execute(f'CREATE TABLE "{pl.schema}".floor (x int)')
        return {"round_trip_p50": p50(lambda: pg.execute("SELECT 1")),
                "durable_insert_p50": p50(
                    lambda: pg.execute(f'INSERT INTO "{pl.schema}".floor VALUES (1)'))}


def mixed(engine: str, flood: int, concurrency: int, progress: Progress, split: bool = False
          ) -> dict[str, Any]:
    """``split``: the urgent queue in its own worker process (else one process serves both).

    An urgent job every 10 ms (about 200 during a 50,000-job flood; at 50 ms a p99 of ~40
    sends was their maximum), and only those sent between the flood's first enqueue and
    its drain's end are counted: the sends before and after are idle pickups."""
    with place(engine) as pl:
        app = _app(pl)
        probe = Probe(pl)
        if split:
            procs = [shiftwork_worker(pl, {"bench": concurrency}, "bulk"),
                     shiftwork_worker(pl, {"urgent": 10}, "urgent")]
        else:
            procs = [shiftwork_worker(pl, {"bench": concurrency, "urgent": 10})]
        try:
            _wait_ready(probe, len(procs))
            before = load()
            stop_file = os.path.join(pl.tmp, "sender.stop")
            sender = spawn([sys.executable, "-m", "benchmarks.sender", "0.010", stop_file],
                           pl.env(), os.path.join(pl.tmp, "sender.log"))
            wait_until(lambda: _latencies(pl), 30, "the sender's first urgent job", 0.01)
            started, window_start = time.perf_counter(), time.time()
            _enqueue_noops(app, flood, chunk=5000)
            enq = time.perf_counter() - started
            _drain_wait(probe, "bench", flood, progress, procs, 0.1)
            flood_s = time.perf_counter() - started
            window = (window_start, time.time())
            with open(stop_file, "w"):
                pass
            sender.wait(30)
            with open(os.path.join(pl.tmp, "sender.log")) as f:
                sent = int(f.read().split()[-1])
            wait_until(lambda: len(_latencies(pl)) >= sent, 60, "urgent jobs to run", 0.05)
        finally:
            stop(procs)
        app.close()
        probe.close()
        rows = read_all(pl.record_dir)

        def during(kind: str) -> list[float]:
            return [float(r[1]) for r in rows
                    if r[0] == kind and window[0] <= float(r[2]) <= window[1]]

        sends, floors = during("e"), during("f")
        drain_window = (window[0] + enq, window[1])
        return {**percentiles(_latencies(pl, window)), "enqueue_call": percentiles(sends),
                "bare_insert": percentiles(floors),
                "worker_part": percentiles(_worker_part(pl, window)),
                "after_enqueue": percentiles(_latencies(pl, drain_window)),
                "flood": flood, "flood_seconds": flood_s,
                "flood_enqueue_seconds": enq, "load": before,
                "topology": "urgent in its own process" if split else "one process, both queues"}


HISTORY_SQL = {
    "postgres": """
        INSERT INTO {t} (queue, task, args, state, priority, attempt, max_attempts, run_at,
                         created_at, attempted_at, finished_at, worker_id)
        SELECT 'bench', 'bench.noop', '{{"args":[],"kwargs":{{}}}}', 'succeeded', 0, 1, 1,
               now() - interval '2 hours', now() - interval '2 hours',
               now() - interval '2 hours', now() - interval '1 hour', 'old-worker'
        FROM generate_series(1, %s)
    """,
    "sqlite": """
        INSERT INTO jobs (queue, task, args, state, priority, attempt, max_attempts, run_at,
                          created_at, attempted_at, finished_at, worker_id)
        WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < ?)
        SELECT 'bench', 'bench.noop', '{{"args":[],"kwargs":{{}}}}', 'succeeded', 0, 1, 1,
               unixepoch() - 7200, unixepoch() - 7200, unixepoch() - 7200,
               unixepoch() - 3600, 'old-worker'
        FROM g
    """,
}


def _history_fill(pl: Place, probe: Probe, rows: int, progress: Progress) -> None:
    chunk = 500_000
    done = 0
    text = HISTORY_SQL[pl.engine].format(t=probe.t)
    while done < rows:
        k = min(chunk, rows - done)
        if pl.engine == "sqlite":
            probe.c.execute("BEGIN IMMEDIATE")
            probe.c.execute(text, (k,))
            probe.c.execute("COMMIT")
        else:
            probe.c.execute(text, (k,))
        done += k
        progress(done / rows * 0.8, f"history {done:,}/{rows:,} rows")
    if pl.engine == "sqlite":
        probe.c.execute("ANALYZE")
    else:
        probe.c.execute(f"VACUUM ANALYZE {probe.t}")


def _claim_cost(app: App, jobs: int, batch: int) -> dict[str, float]:
    _enqueue_noops(app, jobs)
    store = app.store
    claims: list[float] = []
    completes: list[float] = []
    from shiftwork.core.states import JobState
    from shiftwork.model.outcome import Outcome

    while True:
        t0 = time.perf_counter()
        got = store.jobs.claim("bench", batch, "bench-history", 60.0)
        t1 = time.perf_counter()
        if not got:
            break
        claims.append((t1 - t0) * 1000)
        outcomes = [Outcome(j.id, j.attempt, JobState.SUCCEEDED, task=j.task, queue=j.queue)
                    for j in got]
        t2 = time.perf_counter()
        store.jobs.complete_many(outcomes)
        completes.append((time.perf_counter() - t2) * 1000)
    claims.sort()
    return {"claim_ms_mean": sum(claims) / len(claims), "claim_ms_p50": claims[len(claims) // 2],
            "complete_ms_mean": sum(completes) / len(completes)}


def history(engine: str, retained: int, progress: Progress, jobs: int = 5000,
            batch: int = 10) -> dict[str, Any]:
    out: dict[str, Any] = {"retained_rows": retained, "claim_batch": batch, "jobs": jobs}
    for label, rows in (("empty", 0), ("with_history", retained)):
        with place(engine) as pl:
            app = _app(pl)
            probe = Probe(pl)
            if rows:
                _history_fill(pl, probe, rows, progress)
            out["load_" + label] = load()
            out[label] = _claim_cost(app, jobs, batch)
            app.close()
            probe.close()
        progress(0.4 if not rows else 1.0, f"{label} measured")
    out["ratio"] = out["with_history"]["claim_ms_mean"] / out["empty"]["claim_ms_mean"]
    out["load"] = out["load_with_history"]
    return out


def memory(engine: str, n: int, concurrency: int, progress: Progress) -> dict[str, Any]:
    with place(engine) as pl:
        app = _app(pl)
        _enqueue_noops(app, n, lambda f, s: progress(f * 0.2, s))
        app.close()
        probe = Probe(pl)
        before = load()
        proc = shiftwork_worker(pl, {"bench": concurrency})
        samples: list[tuple[float, int]] = []
        try:
            started = time.perf_counter()

            def check() -> bool:
                if proc.poll() is not None:
                    raise RuntimeError(f"worker exited early with code {proc.returncode}")
                left = probe.remaining("bench")
                rss = rss_kib(proc.pid, "VmRSS")
                if rss:
                    samples.append((1 - left / n, rss))
                progress(0.2 + 0.8 * (1 - left / n), f"{n - left:,}/{n:,} done, "
                         f"RSS {rss / 1024 if rss else 0:.0f} MB")
                return left == 0

            wait_until(check, 3600, "the queue to drain", 2.0)
            seconds = time.perf_counter() - started
            peak = rss_kib(proc.pid, "VmHWM") or 0
        finally:
            stop([proc])
        probe.close()

        def at(frac: float) -> float:
            for f, rss in samples:
                if f >= frac:
                    return rss / 1024
            return samples[-1][1] / 1024 if samples else 0.0

        return {"n": n, "peak_rss_mb": peak / 1024, "rss_mb_at_10pct": at(0.1),
                "rss_mb_at_50pct": at(0.5), "rss_mb_at_90pct": at(0.9),
                "drain_seconds": seconds, "load": before}
