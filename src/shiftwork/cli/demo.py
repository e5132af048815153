"""``shiftwork demo``: run the demo shop (``shiftwork.cli.demo_app``) on a throwaway SQLite file.

Two worker processes drain a burst of jobs while a queue table updates live; at the end it
names the commands to look further with.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile

# Real time, not the runtime's clock: the demo's elapsed time, shown to people.
import time

import click

from shiftwork.cli.format import queue_table

# The same default as shiftwork/demo.py, named here so choosing the file does not import
# (and so build) the demo's App.
DEFAULT_DB = os.path.join(tempfile.gettempdir(), "shiftwork-demo.db")


@click.command()
@click.option("--db", default=None,
              help=f"SQLite file to use, emptied first (default: {DEFAULT_DB}, or "
                   "SHIFTWORK_DEMO_DB; the same file at every run).")
@click.option("--jobs", "n_jobs", default=1000, show_default=True, help="Jobs in the burst.")
def demo(db: str | None, n_jobs: int) -> None:
    """A small app with three queues: enqueue a burst, run workers, watch it drain."""
    run_demo(db, n_jobs)


def run_demo(db: str | None, n_jobs: int) -> None:
    # Imported here: importing the demo makes its App, which no other command needs.
    from rich.console import Console
    from rich.live import Live

    console = Console()  # markup on: it prints the demo's own text (its jobs' errors too)
    path = os.path.abspath(db or os.environ.get("SHIFTWORK_DEMO_DB") or DEFAULT_DB)
    # The demo's App and its tasks are made when shiftwork.cli.demo_app is imported, from this
    # variable: set it first, so every task enqueues into this file (never the default one).
    os.environ["SHIFTWORK_DEMO_DB"] = path
    from shiftwork.cli.demo_app import DB, app, enqueue_burst
    if os.path.abspath(DB) != path:
        raise click.UsageError(f"the demo app is already bound to {DB}, not {path}")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    console.print(f"[bold]shiftwork demo[/bold] on SQLite file {path}")
    app.migrate()
    # The workers write to a log file, not the terminal: their lines would interleave
    # with the live table.
    log_path = path + ".workers.log"
    log = open(log_path, "w")  # noqa: SIM115  (closed once the workers are stopped)
    workers = [subprocess.Popen(
        [sys.executable, "-m", "shiftwork.cli", "worker", "shiftwork.cli.demo_app:app",
         "-q", "urgent=4", "-q", "bulk=8", "-q", "slow=2", "--grace", "5",
         "--log-level", "WARNING"], stdout=log, stderr=log, stdin=subprocess.DEVNULL,
        env={**os.environ, "SHIFTWORK_DEMO_DB": path}) for _ in range(2)]
    started = time.monotonic()
    console.print(f"2 worker processes started (pids {', '.join(str(w.pid) for w in workers)}"
                  f"; their log: {log_path}); enqueueing {n_jobs} jobs...", highlight=False)
    try:  # whatever happens from here on, the workers are stopped
        enqueue_burst(n_jobs)
        # transient: the live table goes when it is done, and the final one takes its
        # place (it was left on screen, so the table showed twice).
        with Live(console=console, refresh_per_second=4, transient=True) as live:
            while time.monotonic() - started < 55:
                stats = app.queue_stats()
                elapsed = time.monotonic() - started
                live.update(queue_table(stats, title=f"live, {elapsed:4.1f}s"))
                if stats and all(s.available + s.running + s.scheduled == 0 for s in stats):
                    break
                time.sleep(0.25)
    finally:
        for w in workers:
            w.send_signal(signal.SIGTERM)
        for w in workers:
            w.wait(15)
        log.close()
    stats = app.queue_stats()
    console.print(queue_table(stats, title=f"done in {time.monotonic() - started:.1f}s"))
    dead = app.list_jobs(state="dead", limit=3)
    if dead:
        last = dead[0].errors[-1]
        console.print(f"\n{len(dead)} sync_to_crm jobs are [bold red]dead[/bold red] after "
                      f"{dead[0].counted_attempt} attempts with backoff; the last error of job "
                      f"{dead[0].id}: {last['type']}: {last['message']}", highlight=False)
    dsn = f"sqlite:///{path}"
    console.print("\n[bold]Where to look next[/bold] (after `source .venv/bin/activate`)",
                  soft_wrap=True)
    lines = [f"shiftwork queues --dsn {dsn}",
             f"shiftwork jobs list --state dead --dsn {dsn}"]
    if dead:
        lines += [f"shiftwork jobs show {dead[0].id} --dsn {dsn}     # its error history",
                  f"shiftwork jobs retry {dead[0].id} --dsn {dsn}"]
    # No --token: the dashboard makes one and prints it (a token typed on the command
    # line is one it warns about, being visible in `ps`).
    lines += [f"SHIFTWORK_DEMO_DB={path} shiftwork dashboard shiftwork.cli.demo_app:app",
              "README.md and docs/architecture.md for the API and the design"]
    for line in lines:
        console.print(f"  {line}", soft_wrap=True, highlight=False, markup=False)
