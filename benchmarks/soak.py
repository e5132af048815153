"""Soak: sustained load on Postgres with a long transaction held open in the middle
(``python -m benchmarks soak``; issue #31).

The classic slow death of a Postgres queue: a transaction left open elsewhere on the
server (an analytics session idle in transaction) holds back the xmin horizon, vacuum
cannot remove the jobs table's dead versions, claims walk more dead index entries, and
the backlog grows. On a fresh schema: a paced producer process (benchmarks/
soak_producer.py) enqueues the queue mix at ``--rate``, ``--workers`` real
``shiftwork worker`` processes run it, and from minute ``--hold-at`` a connection of its
own sits in ``BEGIN; SELECT txid_current();`` for ``--hold-minutes``. Every 10 s a row
(see :data:`COLUMNS`) goes to benchmarks/results/soak-<time>[-label].csv; at the end an
SVG of the run next to it and a summary of before / during / after the hold.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import psycopg
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from shiftwork import Settings
from shiftwork.core.errors import ConfigurationError
from shiftwork.core.names import check_queue
from shiftwork.core.redact import redact

from .common import PG_DSN, ROOT, Place, load, machine, place, spawn, stop, wait_until
from .soak_app import DEFAULT_MIX, QueueSpec, make_app, parse_mix, task_name
from .soak_chart import Panel, render

RESULTS = Path(__file__).resolve().parent / "results"
WINDOW = 10.0
COLUMNS = ["elapsed_s", "phase", "throughput_per_s", "enqueue_per_s", "producer_behind_s",
           "pickup_p50_ms", "pickup_p99_ms", "claim_scan_ms", "claim_scan_buffers",
           "dead_tuples", "live_tuples", "vacuums", "backlog", "xmin_age_xids",
           "xmin_age_s", "health", "health_kinds"]
console = Console()


@dataclass
class Plan:
    rate: float
    minutes: float
    hold_at: float
    hold_minutes: float
    workers: int
    concurrency: int
    mix: list[QueueSpec]
    retention: float
    max_wait: float
    backlog_threshold: int
    history_minutes: float

    @property
    def hold(self) -> tuple[float, float]:
        return self.hold_at * 60, (self.hold_at + self.hold_minutes) * 60

    def phase(self, t: float) -> str:
        """The phase of the window ending at ``t``, by its middle."""
        start, end = self.hold
        mid = t - WINDOW / 2
        return "before" if mid < start else "during" if mid < end else "after"


class Sampler:
    """The harness's reads, one connection of its own (autocommit: it never holds the
    horizon itself). Each reads an index or a statistics view, never the whole table:
    the table holds the retained history, millions of rows in a long run."""

    def __init__(self, dsn: str, schema: str, mix: list[QueueSpec]) -> None:
        self.conn = psycopg.connect(dsn, autocommit=True, application_name="soak-sampler")
        self.conn.execute("SET max_parallel_workers_per_gather = 0")
        # As the claim function plans its statement (migrations/functions.sql).
        self.conn.execute("SET enable_seqscan = off")
        self.conn.execute("SET enable_bitmapscan = off")
        self.schema, self.mix = schema, mix
        self.t = f'"{schema}".jobs'
        self.last = self.now()

    def now(self) -> Any:
        row = self.conn.execute("SELECT clock_timestamp()").fetchone()
        assert row is not None
        return row[0]

    def one(self, sql: str, *args: Any) -> Any:
        row = self.conn.execute(sql, args).fetchone()
        assert row is not None
        return row

    def window(self) -> dict[str, Any]:
        t0, t1 = self.last, self.now()
        self.last = t1
        seconds = (t1 - t0).total_seconds()
        # Pickup of the jobs finished in the window, not of those started in it: a job here
        # runs for milliseconds, so they are the same jobs, and finished_at has an index
        # (jobs_finished_idx) where attempted_at has none: no scan of the table every 10 s.
        finished, p50, p99 = self.one(
            "SELECT count(*), percentile_cont(0.5) WITHIN GROUP (ORDER BY ms), "
            "percentile_cont(0.99) WITHIN GROUP (ORDER BY ms) FROM (SELECT "
            "extract(epoch FROM attempted_at - run_at) * 1000 AS ms "
            f"FROM {self.t} WHERE state IN ('succeeded', 'cancelled', 'dead') "
            "AND finished_at > %s AND finished_at <= %s) s", t0, t1)
        scan_ms, buffers = self.claim_scan()
        dead, live, vacuums = self.one(
            "SELECT n_dead_tup, n_live_tup, autovacuum_count + vacuum_count "  # + the first
            "FROM pg_stat_user_tables WHERE schemaname = %s AND relname = 'jobs'", self.schema)
        backlog = self.one(f"SELECT count(*) FROM {self.t} "
                           "WHERE state IN ('available', 'scheduled', 'retrying')")[0]
        # The horizon as vacuum sees it in this database: the oldest xmin or xid of any
        # session (ours excluded: autocommit, between statements it holds none).
        xids, age_s = self.one(
            "SELECT max(greatest(age(backend_xmin), age(backend_xid))), "
            "extract(epoch FROM max(clock_timestamp() - xact_start) FILTER (WHERE "
            "backend_xmin IS NOT NULL OR backend_xid IS NOT NULL)) "
            "FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()")
        return {"throughput_per_s": round(finished / seconds, 1),
                "pickup_p50_ms": _round(p50), "pickup_p99_ms": _round(p99),
                "claim_scan_ms": scan_ms, "claim_scan_buffers": buffers,
                "dead_tuples": dead, "live_tuples": live, "vacuums": vacuums,
                "backlog": backlog, "xmin_age_xids": xids,
                "xmin_age_s": _round(age_s)}

    def claim_scan(self) -> tuple[float, int]:
        """The claim's index walk without its lock and update: the claim function's
        SELECT (ORDER BY priority, run_at, id LIMIT 10, its plan forced the same way) under
        EXPLAIN ANALYZE, summed over the queues: milliseconds and buffers touched. Dead
        index entries are what it steps over; the real claim also locks and rewrites the
        rows it takes, which this leaves out (it must take no job)."""
        total_ms, buffers = 0.0, 0
        for spec in self.mix:
            row = self.one(
                "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "
                f"SELECT id FROM {self.t} WHERE queue = %s "
                "AND state IN ('available', 'scheduled', 'retrying') AND run_at <= now() "
                "ORDER BY priority DESC, run_at, id LIMIT 10", spec.name)
            plan = row[0][0]
            total_ms += float(plan["Execution Time"])
            top = plan["Plan"]
            buffers += int(top.get("Shared Hit Blocks", 0)) + int(top.get("Shared Read Blocks", 0))
        return round(total_ms, 2), buffers

    def close(self) -> None:
        self.conn.close()


def _round(v: Any) -> float | None:
    return None if v is None else round(float(v), 1)


def _health(env: dict[str, str]) -> tuple[str, str]:
    """What ``shiftwork health --json`` says of the app: its status, and the kinds of its
    problems and warnings."""
    full = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}", **env}
    try:
        run = subprocess.run([sys.executable, "-m", "shiftwork.cli", "health", "--json",
                              "--app", "benchmarks.soak_app:app"], cwd=ROOT, env=full,
                             capture_output=True, text=True, timeout=60)
        report = json.loads(run.stdout)
    except (subprocess.TimeoutExpired, json.JSONDecodeError) as exc:
        return "error", type(exc).__name__
    kinds = sorted({p["kind"] for p in report["problems"] + report["warnings"]})
    return str(report["status"]), " ".join(kinds)


def _producer_state(path: str) -> dict[str, Any]:
    try:
        with open(path) as f:
            return dict(json.load(f))
    except (OSError, json.JSONDecodeError):
        return {"enqueued": 0, "behind_s": 0.0, "max_behind_s": 0.0}


@contextmanager
def _target(own_cluster: bool) -> Iterator[Place]:
    """A fresh schema on the server of ``SHIFTWORK_BENCH_PG``, or a throwaway cluster of
    the soak's own (tests/faults/pgcluster.py, Postgres's defaults: autovacuum on)."""
    if not own_cluster:
        with place("postgres") as pl:
            yield pl
        return
    sys.path.insert(0, str(ROOT))
    from tests.faults.pgcluster import ThrowawayCluster

    cluster = ThrowawayCluster({"shared_buffers": "256MB", "max_connections": "200"})
    tmp = tempfile.mkdtemp(prefix="shiftwork-soak-")
    try:
        yield Place("postgres", cluster.dsn, "soak", tmp, tmp)
    finally:
        cluster.close()
        shutil.rmtree(tmp, ignore_errors=True)


def autovacuum_on(dsn: str) -> bool:
    with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as conn:
        row = conn.execute("SELECT current_setting('autovacuum')::bool").fetchone()
        return bool(row and row[0])


def run(plan: Plan, label: str = "", own_cluster: bool = False) -> Path:
    """Run the soak; returns the CSV's path (the SVG is written next to it)."""
    from .common import settle

    RESULTS.mkdir(exist_ok=True)
    stem = f"soak-{time.strftime('%Y%m%d-%H%M')}" + (f"-{label}" if label else "")
    csv_path, svg_path = RESULTS / f"{stem}.csv", RESULTS / f"{stem}.svg"
    rows: list[dict[str, Any]] = []
    with _target(own_cluster) as pl:
        mix_text = ",".join(f"{s.name}:{s.share:g}:{s.cost_ms:g}:{s.priority}" for s in plan.mix)
        env = {**pl.env(), "BENCH_MIX": mix_text, "BENCH_RETENTION": str(plan.retention),
               "BENCH_MAX_WAIT": str(plan.max_wait)}
        admin = make_app(pl.dsn, pl.schema, plan.mix, plan.retention, plan.max_wait)
        admin.migrate()
        _history(pl.dsn, pl.schema, plan)
        settle()
        cmd = [sys.executable, "-m", "shiftwork.cli", "worker", "benchmarks.soak_app:app",
               "--log-level", "WARNING", "--grace", "5"]
        for spec in plan.mix:
            cmd += ["-q", f"{spec.name}={plan.concurrency}"]
        procs = [spawn(cmd, env, os.path.join(pl.tmp, f"worker{i}.log"))
                 for i in range(plan.workers)]
        state = os.path.join(pl.tmp, "producer.json")
        holder: psycopg.Connection[Any] | None = None
        sampler = None
        server: Any = None
        try:
            wait_until(lambda: len(admin.store.fleet.workers_list()) >= plan.workers, 120,
                       f"{plan.workers} workers to register", interval=0.2)
            sampler = Sampler(pl.dsn, pl.schema, plan.mix)
            procs.append(spawn([sys.executable, "-m", "benchmarks.soak_producer"],
                               {**env, "BENCH_RATE": str(plan.rate), "BENCH_STATE": state},
                               os.path.join(pl.tmp, "producer.log")))
            started = time.monotonic()
            total = plan.minutes * 60
            hold_start, hold_end = plan.hold
            enqueued_before, k = 0, 0
            with Progress(TextColumn("soak {task.fields[phase]:<7}"), BarColumn(),
                          TextColumn("{task.description}"), TimeElapsedColumn(),
                          console=console) as bar:
                tid = bar.add_task("starting", total=total, phase="before")
                while True:
                    k += 1
                    due = started + k * WINDOW
                    while time.monotonic() < due:
                        elapsed = time.monotonic() - started
                        if holder is None and hold_start <= elapsed < hold_end:
                            holder = _hold(pl.dsn)
                        elif holder is not None and elapsed >= hold_end:
                            holder.close()  # the session ends: its transaction rolls back
                            holder = None
                        for p in procs:
                            if p.poll() is not None:
                                raise RuntimeError(f"a soak process exited early (code "
                                                   f"{p.returncode}); logs in {pl.tmp}")
                        time.sleep(min(0.2, max(due - time.monotonic(), 0.0)))
                    elapsed = time.monotonic() - started
                    row: dict[str, Any] = {"elapsed_s": round(elapsed, 1),
                                           "phase": plan.phase(elapsed)}
                    produced = _producer_state(state)
                    row.update(sampler.window())
                    row["enqueue_per_s"] = round(
                        (produced["enqueued"] - enqueued_before) / WINDOW, 1)
                    row["producer_behind_s"] = produced["max_behind_s"]
                    enqueued_before = produced["enqueued"]
                    row["health"], row["health_kinds"] = _health(env)
                    rows.append(row)
                    _write_csv(csv_path, rows)
                    bar.update(tid, completed=min(elapsed, total), phase=row["phase"],
                               description=(
                                   f"{row['throughput_per_s']:>7.0f} jobs/s, backlog "
                                   f"{row['backlog']:>7,}, dead {row['dead_tuples']:>8,}, "
                                   f"p99 {row['pickup_p99_ms'] or 0:>7.0f} ms, "
                                   f"health {row['health']}"))
                    if elapsed >= total:
                        break
        finally:
            if holder is not None:
                holder.close()
            stop(procs, timeout=30)
            if sampler is not None:
                server = sampler.one("SELECT current_setting('server_version'), "
                                     "current_setting('autovacuum')")
                sampler.close()
            admin.close()
    svg_path.write_text(chart(rows, plan, label))
    summary = summarize(rows, plan)
    _print_summary(summary, plan)
    meta = {"machine": machine(), "own_cluster": own_cluster, "load_at_end": load(),
            "server": {"version": server[0], "autovacuum": server[1]} if server else None,
            "plan": {"rate": plan.rate, "minutes": plan.minutes, "hold_at": plan.hold_at,
                     "hold_minutes": plan.hold_minutes, "workers": plan.workers,
                     "concurrency": plan.concurrency, "mix": mix_text,
                     "retention": plan.retention, "max_wait": plan.max_wait,
                     "backlog_threshold": plan.backlog_threshold,
                     "history_minutes": plan.history_minutes},
            "summary": summary}
    (RESULTS / f"{stem}.json").write_text(json.dumps(meta, indent=2, default=str))
    console.print(f"results: {csv_path}, {svg_path.name}, {stem}.json")
    return csv_path


def _history(dsn: str, schema: str, plan: Plan) -> None:
    """The finished jobs a running queue keeps (``--history-minutes`` of ``--rate``), written
    before the run and vacuumed: a fresh table is all churn, and its dead ratio alone would
    trip the health check in the first minute, before autovacuum's first pass."""
    total = int(plan.rate * plan.history_minutes * 60)
    if total <= 0:
        return
    with console.status(f"writing {total:,} finished jobs of history"), \
            psycopg.connect(dsn, autocommit=True) as conn:
        for spec in plan.mix:
            n = int(total * spec.share)
            conn.execute(
                f'INSERT INTO "{schema}".jobs (queue, task, args, state, priority, attempt, '
                "max_attempts, run_at, created_at, attempted_at, finished_at) "
                "SELECT %(queue)s, %(task)s, '{\"args\": []}', 'succeeded', %(priority)s, "
                "1, 1, t, t, "
                "t + interval '2 ms', t + interval '3 ms' FROM (SELECT now() - "
                "make_interval(secs => %(span)s * (1 - g::float8 / %(n)s)) AS t "
                "FROM generate_series(1, %(n)s) g) s",
                {"queue": spec.name, "task": task_name(spec.name), "priority": spec.priority,
                 "span": plan.history_minutes * 60, "n": n})
        conn.execute(f'VACUUM ANALYZE "{schema}".jobs')


def _hold(dsn: str) -> psycopg.Connection[Any]:
    """The analytics session: a transaction with an xid, then idle in transaction."""
    conn = psycopg.connect(dsn, application_name="soak-long-transaction")
    conn.execute("SELECT txid_current()")  # psycopg opened the transaction (BEGIN)
    return conn


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)


def chart(rows: list[dict[str, Any]], plan: Plan, label: str = "") -> str:
    times = [float(r["elapsed_s"]) for r in rows]

    def col(name: str) -> list[float | None]:
        return [None if r[name] is None else float(r[name]) for r in rows]

    what = f" ({label})" if label else ""
    title = (f"soak{what}: {plan.rate:g} jobs/s, {plan.workers} workers, transaction held "
             f"{plan.hold_at:g}-{plan.hold_at + plan.hold_minutes:g} min")
    return render(title, times, [
        Panel("jobs/s", [("finished", col("throughput_per_s")),
                         ("enqueued", col("enqueue_per_s"))]),
        Panel("pickup (ms)", [("p99", col("pickup_p99_ms")), ("p50", col("pickup_p50_ms"))]),
        Panel("jobs table tuples", [("dead", col("dead_tuples")),
                                    ("live", col("live_tuples"))]),
        Panel("backlog (waiting jobs)", [("backlog", col("backlog"))]),
        Panel("claim scan (ms, all queues)", [("claim scan", col("claim_scan_ms"))]),
    ], plan.hold, [str(r["health"]) for r in rows])


def summarize(rows: list[dict[str, Any]], plan: Plan) -> dict[str, Any]:
    """Before / during / after the hold, the recovery, and when health first warned."""
    out: dict[str, Any] = {}
    for phase in ("before", "during", "after"):
        part = [r for r in rows if r["phase"] == phase]
        p99 = [r["pickup_p99_ms"] for r in part if r["pickup_p99_ms"] is not None]
        out[phase] = {
            "samples": len(part),
            "throughput_per_s": round(statistics.mean(r["throughput_per_s"] for r in part))
            if part else None,
            "p99_ms_median": round(statistics.median(p99)) if p99 else None,
            "p99_ms_max": round(max(p99)) if p99 else None,
            "backlog_max": max((r["backlog"] for r in part), default=None),
        }
    peak = max(rows, key=lambda r: r["dead_tuples"] or 0, default=None)
    out["dead_tuples_peak"] = peak["dead_tuples"] if peak else None
    out["dead_tuples_peak_at_s"] = peak["elapsed_s"] if peak else None
    hold_start, hold_end = plan.hold
    level = out["before"]["throughput_per_s"] or plan.rate
    backlog_level = out["before"]["backlog_max"] or 0
    after = [r for r in rows if r["elapsed_s"] > hold_end]
    during = [r for r in rows if r["phase"] == "during"]
    # Did it fall at all? If no window of the hold or after dropped under 95% of the level
    # before, "back after N s" would only name the first window.
    out["throughput_fell"] = any(r["throughput_per_s"] < 0.95 * level for r in during + after)
    back = next((r for r in after if r["throughput_per_s"] >= 0.95 * level), None)
    drained = next((r for r in after if r["backlog"] <= max(backlog_level, plan.rate)), None)
    out["throughput_back_s_after_hold"] = (round(back["elapsed_s"] - hold_end)
                                          if back else None)
    out["backlog_back_s_after_hold"] = (round(drained["elapsed_s"] - hold_end)
                                       if drained else None)
    warned = next((r for r in rows if r["health"] not in ("ok",)), None)
    crossed = next((r for r in rows if r["backlog"] > plan.backlog_threshold), None)
    out["health_first_not_ok"] = ({"at_s": warned["elapsed_s"], "status": warned["health"],
                                   "kinds": warned["health_kinds"]} if warned else None)
    out["health_not_ok_s_after_hold_start"] = (round(warned["elapsed_s"] - hold_start)
                                              if warned else None)
    out["backlog_crossed_threshold_at_s"] = crossed["elapsed_s"] if crossed else None
    out["health_not_ok_s_after_backlog_crossed"] = (
        round(warned["elapsed_s"] - crossed["elapsed_s"]) if warned and crossed else None)
    return out


def _print_summary(s: dict[str, Any], plan: Plan) -> None:
    def fmt(v: Any, unit: str = "") -> str:
        return "-" if v is None else f"{v:,}{unit}"

    console.print(f"[bold]soak summary[/bold] ({plan.rate:g} jobs/s target, hold "
                  f"{plan.hold_at:g}-{plan.hold_at + plan.hold_minutes:g} min)")
    for phase in ("before", "during", "after"):
        p = s[phase]
        console.print(f"  {phase:<7} throughput {fmt(p['throughput_per_s'], ' jobs/s')}, "
                      f"pickup p99 median {fmt(p['p99_ms_median'], ' ms')} (max "
                      f"{fmt(p['p99_ms_max'], ' ms')}), backlog max {fmt(p['backlog_max'])}")
    console.print(f"  dead tuples at peak: {fmt(s['dead_tuples_peak'])} "
                  f"(at {fmt(s['dead_tuples_peak_at_s'], ' s')})")
    if s["throughput_fell"]:
        console.print(f"  after the hold: throughput back in "
                      f"{fmt(s['throughput_back_s_after_hold'], ' s')}, backlog back in "
                      f"{fmt(s['backlog_back_s_after_hold'], ' s')}")
    else:
        console.print("  throughput never fell under 95% of its level before the hold; "
                      f"backlog back to its level {fmt(s['backlog_back_s_after_hold'], ' s')} "
                      "after the hold")
    first = s["health_first_not_ok"]
    if first is None:
        console.print("  health: ok throughout")
    else:
        console.print(f"  health first {first['status']} at {first['at_s']} s "
                      f"({first['kinds']}): {fmt(s['health_not_ok_s_after_hold_start'], ' s')}"
                      f" after the hold began, "
                      f"{fmt(s['health_not_ok_s_after_backlog_crossed'], ' s')} after the "
                      f"backlog crossed {plan.backlog_threshold:,} (at "
                      f"{fmt(s['backlog_crossed_threshold_at_s'], ' s')})")


@click.command()
@click.option("--rate", type=float, default=2000.0, show_default=True,
              help="Jobs per second the producer enqueues.")
@click.option("--minutes", type=float, default=30.0, show_default=True,
              help="Length of the run.")
@click.option("--hold-at", type=float, default=10.0, show_default=True,
              help="Minute the long transaction starts.")
@click.option("--hold-minutes", type=float, default=10.0, show_default=True,
              help="How long it stays open (idle in transaction).")
@click.option("--workers", type=int, default=2, show_default=True,
              help="`shiftwork worker` processes.")
@click.option("--concurrency", type=int, default=10, show_default=True,
              help="Slots per queue in each worker process.")
@click.option("--queues", "mix", default=DEFAULT_MIX, show_default=True,
              help="The mix: name:share:cost_ms[:priority], comma-separated.")
@click.option("--retention", type=float, default=Settings().retention_finished,
              show_default=True,
              help="Seconds a finished job is kept before the pruner deletes it.")
@click.option("--history-minutes", type=float, default=30.0, show_default=True,
              help="Finished jobs in the table at the start: this many minutes of --rate.")
@click.option("--max-wait", type=float, default=60.0, show_default=True,
              help="Each queue's max_wait (health fails past it).")
@click.option("--backlog-threshold", type=int, default=None,
              help="Backlog the summary times health against [default: 10 s of --rate].")
@click.option("--own-cluster", is_flag=True,
              help="Run on a throwaway cluster of its own (initdb; autovacuum on) instead "
                   "of SHIFTWORK_BENCH_PG's server.")
@click.option("--label", default="", help="Appended to the result files' names (e.g. smoke).")
def soak(rate: float, minutes: float, hold_at: float, hold_minutes: float, workers: int,
         concurrency: int, mix: str, retention: float, max_wait: float,
         backlog_threshold: int | None, history_minutes: float, own_cluster: bool,
         label: str) -> None:
    """Sustained load with a long transaction in the middle: CSV, SVG and a summary."""
    for name, value in (("--rate", rate), ("--minutes", minutes), ("--workers", workers),
                        ("--concurrency", concurrency), ("--retention", retention),
                        ("--max-wait", max_wait)):
        if value <= 0:
            raise click.BadParameter(f"must be > 0, got {value:g}", param_hint=name)
    if history_minutes < 0:
        raise click.BadParameter(f"must be >= 0, got {history_minutes:g}",
                                 param_hint="--history-minutes")
    if hold_at < 0 or hold_minutes < 0 or hold_at + hold_minutes > minutes:
        raise click.BadParameter(
            f"the hold ({hold_at:g} + {hold_minutes:g} min) must lie within the run's "
            f"{minutes:g} minutes", param_hint="--hold-at/--hold-minutes")
    if label and not all(c.isalnum() or c in "-_" for c in label):
        raise click.BadParameter("letters, digits, - and _ only", param_hint="--label")
    try:
        queues = parse_mix(mix)
        for spec in queues:
            check_queue(spec.name)
    except (ValueError, ConfigurationError) as exc:
        raise click.BadParameter(str(exc), param_hint="--queues") from None
    plan = Plan(rate, minutes, hold_at, hold_minutes, workers, concurrency, queues, retention,
                max_wait, backlog_threshold if backlog_threshold is not None else int(rate * 10),
                history_minutes)
    if not own_cluster and not autovacuum_on(PG_DSN):
        # What the soak measures is a held horizon keeping autovacuum from the jobs table:
        # with autovacuum off (a test server's setting) dead tuples pile up either way.
        raise click.UsageError(
            f"autovacuum is off on {redact(PG_DSN)}: the soak measures what a long "
            "transaction does to autovacuum; turn it on there, or pass --own-cluster")
    run(plan, label, own_cluster)


if __name__ == "__main__":
    soak()
