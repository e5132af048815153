"""``python -m benchmarks run``: every workload on every engine, a table, and JSON."""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from . import ours
from .common import load, machine, settle
from .report import rows_for, targets
from .soak import soak

WORKLOADS = ["drain", "drain-async", "enqueue", "latency", "mixed", "history", "memory", "peers",
             "latency-rounds"]
RESULTS = Path(__file__).resolve().parent / "results"
console = Console()


def _list(value: str, allowed: list[str], what: str) -> list[str]:
    items = [v.strip() for v in value.split(",") if v.strip()]
    bad = [v for v in items if v not in allowed]
    if bad:
        raise click.BadParameter(f"unknown {what} {bad}; choose from {', '.join(allowed)}")
    return items


@click.group()
def main() -> None:
    """shiftwork benchmarks."""


main.add_command(soak)


PEER_NAMES = ("pgqueuer", "awa", "chancy", "oban", "procrastinate", "dbos", "celery")


@main.command()
@click.option("--engine", default="all", show_default=True,
              help="sqlite, postgres or all.")
@click.option("--workload", "workloads", default=",".join(WORKLOADS), show_default=True,
              help="Comma-separated: " + ", ".join(WORKLOADS) + ".")
@click.option("--quick", is_flag=True, help="Smaller N everywhere: a smoke run in ~2 minutes.")
@click.option("--drain-jobs", type=int, default=20_000, show_default=True)
@click.option("--concurrency", type=int, default=50, show_default=True,
              help="Slots per worker process for no-op jobs (every system gets the same).")
@click.option("--repeat", type=int, default=3, show_default=True,
              help="Drains per figure (ours): the median is reported, every run kept.")
@click.option("--memory-jobs", type=int, default=1_000_000, show_default=True)
@click.option("--history-rows", type=int, default=5_000_000, show_default=True)
@click.option("--peer-python", default=os.environ.get("SHIFTWORK_BENCH_PEER_PYTHON",
                                                      sys.executable),
              show_default="this Python, or $SHIFTWORK_BENCH_PEER_PYTHON",
              help="A Python with the `bench` extra (the peers) installed.")
@click.option("--peers", "peer_names", default=",".join(PEER_NAMES), show_default=True)
@click.option("--rounds", type=click.IntRange(min=1), default=5, show_default=True,
              help="latency-rounds: rounds of every system's idle pickup, interleaved.")
@click.option("--supervised", is_flag=True,
              help="Drain with one `shiftwork worker --processes N` instead of N workers.")
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path),
              default=RESULTS, show_default="benchmarks/results",
              help="Where the run's <time>.json goes.")
def run(engine: str, workloads: str, quick: bool, drain_jobs: int, concurrency: int,
        repeat: int, memory_jobs: int, history_rows: int, peer_python: str,
        peer_names: str, rounds: int, supervised: bool, results_dir: Path) -> None:
    """Run the workloads; print a table; write benchmarks/results/<time>.json."""
    engines = ["sqlite", "postgres"] if engine == "all" else _list(
        engine, ["sqlite", "postgres"], "engine")
    chosen = _list(workloads, WORKLOADS, "workload")
    peers = _list(peer_names, list(PEER_NAMES), "peer")
    if quick:
        drain_jobs = min(drain_jobs, 5_000)
        memory_jobs = min(memory_jobs, 100_000)
        history_rows = min(history_rows, 500_000)
    calls, bulk, lat_count, flood = (500, 20_000, 100, 10_000) if quick else \
        (3_000, 100_000, 500, 50_000)
    results: dict[str, Any] = {"started": datetime.now(UTC).isoformat(), "machine": machine(),
                               "quick": quick, "load_at_start": load(), "ours": {},
                               "peers": {}}
    plan: list[tuple[str, str, Any]] = []
    for eng in engines:
        for w in chosen:
            if w == "drain":
                for n_workers in (1, 2):
                    plan.append((eng, f"drain-{n_workers}w", lambda e, p, k=n_workers:
                                 ours.drain_repeated(e, drain_jobs, k, concurrency, p,
                                                     max(1, repeat), supervised)))
            elif w == "drain-async":  # the job as a coroutine, like the asyncio peers'
                for n_workers in (1, 2):
                    plan.append((eng, f"drain-async-{n_workers}w", lambda e, p, k=n_workers:
                                 ours.drain_repeated(e, drain_jobs, k, concurrency, p,
                                                     max(1, repeat), supervised, True)))
            elif w == "enqueue":
                plan.append((eng, "enqueue", lambda e, p: ours.enqueue(e, calls, bulk, p)))
            elif w == "latency":
                plan.append((eng, "latency", lambda e, p: ours.latency(e, lat_count, p)))
            elif w == "mixed":
                plan.append((eng, "mixed", lambda e, p: ours.mixed(e, flood, concurrency, p)))
                plan.append((eng, "mixed-split", lambda e, p: ours.mixed(
                    e, flood, concurrency, p, split=True)))
            elif w == "history":
                plan.append((eng, "history", lambda e, p: ours.history(e, history_rows, p)))
            elif w == "memory":
                plan.append((eng, "memory", lambda e, p: ours.memory(e, memory_jobs,
                                                                      concurrency, p)))
    if "peers" in chosen:
        from . import peers as peer_mod

        for name in peers:
            plan.append(("peer", name, lambda e, p, nm=name: peer_mod.run_peer(
                nm, peer_python, drain_jobs, concurrency, calls, bulk, lat_count, p,
                max(1, repeat))))
    if "latency-rounds" in chosen:  # every system's pickup over the same machine states
        from .latency_rounds import latency_rounds

        plan.append(("rounds", "latency-rounds", lambda e, p: latency_rounds(
            peers, peer_python, lat_count, rounds, p)))
    results_dir.mkdir(parents=True, exist_ok=True)
    out_path = results_dir / f"{time.strftime('%Y%m%d-%H%M%S')}.json"
    with Progress(TextColumn("{task.fields[label]:<26}"), BarColumn(), TextColumn(
            "{task.description}"), TimeElapsedColumn(), console=console) as bar:
        tasks = {(e, w): bar.add_task("waiting", total=1.0, label=f"{e} {w}")
                 for e, w, _ in plan}
        for eng, name, fn in plan:
            tid = tasks[(eng, name)]

            def progress(frac: float, text: str, tid: Any = tid) -> None:
                bar.update(tid, completed=max(0.0, min(frac, 1.0)), description=text)

            settle()
            try:
                value = fn(eng, progress)
            except Exception as exc:
                value = {"error": f"{type(exc).__name__}: {exc}"}
                bar.update(tid, description=f"[red]failed: {exc}")
            else:
                bar.update(tid, completed=1.0, description="done")
            if eng == "rounds":
                results["latency_rounds"] = value
            else:
                bucket = (results["peers"] if eng == "peer"
                          else results["ours"].setdefault(eng, {}))
                bucket[name] = value
            out_path.write_text(json.dumps(results, indent=2))
    results["finished"] = datetime.now(UTC).isoformat()
    results["load_at_end"] = load()
    results["targets"] = targets(results)
    out_path.write_text(json.dumps(results, indent=2))
    _print(results)
    console.print(f"results: {out_path}")


def _print(results: dict[str, Any]) -> None:
    m = results["machine"]
    console.print(f"[bold]machine[/bold]: {m['cpus']} x {m['cpu']}, {m['memory_mb']} MB, "
                  f"Python {m['python']}, {m['postgres']}, SQLite {m['sqlite']} "
                  f"({m['sqlite_sync']}); load {results['load_at_start']} → "
                  f"{results['load_at_end']}")
    table = Table(title="shiftwork benchmarks")
    for col in ("workload", "engine", "figure", "load (1/5/15m)"):
        table.add_column(col)
    for row in rows_for(results):
        table.add_row(*row)
    console.print(table)
    t = Table(title="targets (issue #5)")
    for col in ("target", "measured", "met"):
        t.add_column(col)
    for name, measured, met in results["targets"]:
        t.add_row(name, measured, {True: "[green]yes", False: "[red]no", None: "-"}[met])
    console.print(t)
