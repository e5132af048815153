"""`shiftwork top`: queues, workers and throughput, refreshed in place."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rich.console import Group
from rich.live import Live
from rich.text import Text

from shiftwork.core.safetext import escape_controls
from shiftwork.observe.text import format_age, make_table
from shiftwork.observe.views import Overview, overview

if TYPE_CHECKING:
    from shiftwork.app import App


def render(view: Overview, title: str = "shiftwork top") -> Group:
    """One frame; every name in it escaped (``safetext``), whatever console prints it."""
    head = Text(f"{title}   {view.now:%Y-%m-%d %H:%M:%S} UTC   workers alive: "
                f"{view.workers_alive}", style="bold")
    numbers = ("waiting", "scheduled", "running", "dead", "oldest waiting", "max wait",
               "done/min (5m)", "last 60 s")
    queues = make_table(("queue", *numbers), title="queues", right=numbers)
    for row in view.queues:
        s = row.stats
        age = Text(format_age(s.oldest_waiting_age), style="bold red" if row.over else "")
        name = escape_controls(s.queue) + (" (paused)" if s.paused else "")
        queues.add_row(name, str(s.available), str(s.scheduled), str(s.running),
                       Text(str(s.dead), style="red" if s.dead else ""), age,
                       format_age(row.max_wait), f"{row.per_minute:.1f}", str(row.last_60s))
    workers = make_table(("worker", "queues", "in flight", "heartbeat", "alive"),
                         title="workers", right=("in flight",))
    for w in view.workers:
        workers.add_row(escape_controls(w.info.id),
                        escape_controls(", ".join(f"{q}={n}" for q, n in w.info.queues.items())),
                        str(w.in_flight), f"{format_age(w.heartbeat_age)} ago",
                        Text("yes", style="green") if w.alive else Text("no", style="red"))
    parts: list[object] = [head, queues, workers]
    if view.schedules:
        sched = make_table(("schedule", "next fire", "last success", "late"),
                           title="schedules")
        for sc in view.schedules:
            sched.add_row(escape_controls(sc.name),
                          f"{sc.next_fire_at:%Y-%m-%d %H:%M:%S}" if sc.next_fire_at
                          else "-", f"{sc.last_success_at:%Y-%m-%d %H:%M:%S}"
                          if sc.last_success_at else "-",
                          Text(escape_controls("LATE " + sc.reason), style="bold red")
                          if sc.late else "")
        parts.append(sched)
    return Group(*parts)  # type: ignore[arg-type]


def run_top(app: App, interval: float = 2.0, once: bool = False) -> None:
    from shiftwork.core.safetext import plain_console

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
