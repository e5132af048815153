"""`shiftwork top`: queues, workers and throughput, refreshed in place."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rich.console import Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from .views import Overview, overview

if TYPE_CHECKING:
    from ..app import App


def format_age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = max(seconds, 0.0)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{seconds:.1f}s"


def render(view: Overview, title: str = "shiftwork top") -> Group:
    head = Text(f"{title}   {view.now:%Y-%m-%d %H:%M:%S} UTC   workers alive: "
                f"{view.workers_alive}", style="bold")
    queues = Table(title="queues", expand=True)
    for col in ("queue", "waiting", "scheduled", "running", "dead", "oldest waiting",
                "max wait", "done/min (5m)", "last minute"):
        queues.add_column(col, justify="left" if col == "queue" else "right")
    for row in view.queues:
        s = row.stats
        last = row.last_hour[-1].finished if row.last_hour else 0
        age = Text(format_age(s.oldest_waiting_age), style="bold red" if row.over else "")
        name = s.queue + (" (paused)" if s.paused else "")
        queues.add_row(name, str(s.available), str(s.scheduled), str(s.running),
                       Text(str(s.dead), style="red" if s.dead else ""), age,
                       format_age(row.max_wait), f"{row.per_minute:.1f}", str(last))
    workers = Table(title="workers", expand=True)
    for col in ("worker", "queues", "in flight", "heartbeat", "alive"):
        workers.add_column(col)
    for w in view.workers:
        workers.add_row(w.info.id, ", ".join(f"{q}={n}" for q, n in w.info.queues.items()),
                        str(w.in_flight), f"{format_age(w.heartbeat_age)} ago",
                        Text("yes", style="green") if w.alive else Text("no", style="red"))
    parts: list[object] = [head, queues, workers]
    if view.schedules:
        sched = Table(title="schedules", expand=True)
        for col in ("schedule", "next fire", "last success", "late"):
            sched.add_column(col)
        for sc in view.schedules:
            sched.add_row(sc.name, f"{sc.next_fire_at:%Y-%m-%d %H:%M:%S}" if sc.next_fire_at
                          else "-", f"{sc.last_success_at:%Y-%m-%d %H:%M:%S}"
                          if sc.last_success_at else "-",
                          Text("LATE " + sc.reason, style="bold red") if sc.late else "")
        parts.append(sched)
    return Group(*parts)  # type: ignore[arg-type]


def run_top(app: App, interval: float = 2.0, once: bool = False) -> None:
    from ..safetext import plain_console

    console = plain_console()
    if once or not console.is_terminal:
        # Piped or logged: one snapshot per interval (a live display would print nothing
        # until it stopped).
        try:
            while True:
                console.print(render(overview(app)))
                if once:
                    return
                console.file.flush()
                time.sleep(interval)
        except KeyboardInterrupt:
            return
    with Live(render(overview(app)), console=console, refresh_per_second=4,
              screen=False) as live:
        try:
            while True:
                time.sleep(interval)
                live.update(render(overview(app)))
        except KeyboardInterrupt:
            pass
