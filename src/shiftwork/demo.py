"""``shiftwork demo``: a small shop's background work, on a throwaway SQLite file.

Three queues by latency class (urgent one-time codes, bulk thumbnails, slow
reports), and a CRM sync that keeps failing so you can see retries end in
``dead``. Two worker processes drain a burst while the table updates live.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import tempfile
import time

from .app import App
from .retry import Backoff
from .settings import Settings

DB = os.environ.get("SHIFTWORK_DEMO_DB", os.path.join(tempfile.gettempdir(), "shiftwork-demo.db"))

app = App(f"sqlite:///{DB}", settings=Settings(heartbeat_interval=1.0, lease_seconds=5.0,
                                               poll_interval=0.2))


@app.task(queue="urgent", priority=10, max_attempts=5)
def send_login_code(user_id: int, channel: str = "sms") -> dict[str, object]:
    time.sleep(0.005)  # a call to the SMS gateway
    return {"user_id": user_id, "channel": channel}


@app.task(queue="bulk", max_attempts=5, retry=Backoff(initial=0.2, maximum=1.0))
def make_thumbnail(image_id: int, width: int = 320) -> None:
    time.sleep(random.uniform(0.01, 0.04))
    if random.random() < 0.03:  # a flaky storage read, fixed by a retry
        raise OSError(f"image {image_id}: storage read timed out")


@app.task(queue="slow", concurrency=2, timeout=30)
def monthly_report(account_id: int, month: str) -> None:
    time.sleep(random.uniform(0.3, 0.8))


class CRMUnavailable(Exception):
    pass


@app.task(queue="bulk", max_attempts=3, retry=Backoff(initial=0.3, maximum=1.0, jitter=False))
def sync_to_crm(contact_id: int) -> None:
    raise CRMUnavailable(f"CRM API answered 503 for contact {contact_id}")


def _enqueue_burst(n_jobs: int) -> None:
    n_reports = max(n_jobs // 30, 4)
    n_codes = max(n_jobs // 6, 10)
    n_thumbs = max(n_jobs - n_reports - n_codes - 3, 10)
    app.enqueue_many([make_thumbnail.call(i) for i in range(n_thumbs)])
    app.enqueue_many([monthly_report.call(a, "2026-10") for a in range(n_reports)])
    app.enqueue_many([sync_to_crm.call(c) for c in range(3)])
    for u in range(n_codes):  # one at a time, as a web app would
        send_login_code.enqueue(u)


def run_demo(db: str | None, n_jobs: int) -> None:
    from rich.console import Console
    from rich.live import Live

    from .cli import queue_table

    console = Console()
    path = db or DB
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    os.environ["SHIFTWORK_DEMO_DB"] = path
    global app
    if path != DB:
        app.close()
        app = App(f"sqlite:///{path}", settings=app.settings)
    console.print(f"[bold]shiftwork demo[/bold] on SQLite file {path}")
    app.migrate()
    workers = [subprocess.Popen(
        [sys.executable, "-m", "shiftwork.cli", "worker", "shiftwork.demo:app",
         "-q", "urgent=4", "-q", "bulk=8", "-q", "slow=2", "--grace", "5",
         "--log-level", "CRITICAL"],
        env={**os.environ, "SHIFTWORK_DEMO_DB": path}) for _ in range(2)]
    started = time.monotonic()
    console.print(f"2 worker processes started (pids {', '.join(str(w.pid) for w in workers)}); "
                  f"enqueueing {n_jobs} jobs...")
    _enqueue_burst(n_jobs)
    try:
        with Live(console=console, refresh_per_second=4) as live:
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
    stats = app.queue_stats()
    console.print(queue_table(stats, title=f"done in {time.monotonic() - started:.1f}s"))
    dead = app.list_jobs(state="dead", limit=3)
    if dead:
        last = dead[0].errors[-1]
        console.print(f"\n{len(dead)} sync_to_crm jobs are [bold red]dead[/bold red] after "
                      f"{dead[0].attempt} attempts with backoff; the last error of job "
                      f"{dead[0].id}: {last['type']}: {last['message']}", highlight=False)
    dsn = f"sqlite:///{path}"
    console.print("\n[bold]Where to look next[/bold] (after `source .venv/bin/activate`)",
                  soft_wrap=True)
    lines = [f"shiftwork queues --dsn {dsn}",
             f"shiftwork jobs list --state dead --dsn {dsn}"]
    if dead:
        lines += [f"shiftwork jobs show {dead[0].id} --dsn {dsn}     # its error history",
                  f"shiftwork jobs retry {dead[0].id} --dsn {dsn}"]
    lines += [f"SHIFTWORK_DEMO_DB={path} shiftwork dashboard shiftwork.demo:app --token demo-token",
              "README.md and docs/architecture.md for the API and the design"]
    for line in lines:
        console.print(f"  {line}", soft_wrap=True, highlight=False, markup=False)
