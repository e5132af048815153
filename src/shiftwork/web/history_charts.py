"""The dashboard's history charts: one queue's or one task's last 24 hours from the
leader's rollup (throughput, failures, p50/p95 run time, oldest waiting), refreshed live.

Registered by the dashboard (``history_chart_routes``), behind its gate (login, CSRF,
escaped templates). A page and each live refresh read the rollup once (``app.history``).
"""

from __future__ import annotations

from datetime import datetime

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from shiftwork.model.records import HistoryBucket
from shiftwork.observe.history import series, summarize
from shiftwork.web.day_chart import DayChart, count_chart, time_chart
from shiftwork.web.history import Board

HOURS = 24.0
#: The rollup gains a bucket every five minutes; a refresh every 30 s shows it soon.
REFRESH_MS = 30_000
KINDS = {"queues": "queue", "tasks": "task"}


def history_chart_routes(board: Board) -> list[Route]:
    pages = HistoryCharts(board)
    return [Route("/history/{kind}/{name:path}", pages.page)]


def charts_for(rows: list[HistoryBucket], now: datetime) -> list[DayChart]:
    s = series(rows, now, HOURS)
    return [
        count_chart("Throughput", s.finished, s.start, "#3b82f6", "jobs finished"),
        count_chart("Failures", s.failures, s.start, "#dc2626", "failed attempts"),
        time_chart("Run time", [("p50", "#3b82f6", s.p50), ("p95", "#f59e0b", s.p95)],
                   s.start, "run time of the jobs finished, p50 and p95"),
        time_chart("Oldest waiting", [("oldest", "#7c3aed", s.oldest_wait)], s.start,
                   "age of the oldest due job when each five minutes ended"),
    ]


class HistoryCharts:
    def __init__(self, board: Board) -> None:
        self.board = board

    async def page(self, request: Request) -> Response:
        kind = KINDS.get(request.path_params["kind"])
        name: str = request.path_params["name"]
        if kind is None or not name:
            return self.board.page(request, "error.html", status=404,
                                   error="history is kept per queue or per task")
        app = self.board.app
        rows = await run_in_threadpool(app.history, hours=HOURS, **{kind: name})  # one query
        now = app.clock.now()
        context = {"kind": kind, "name": name, "charts": charts_for(rows, now),
                   "summary": summarize(rows), "hours": HOURS, "path_kind":
                   request.path_params["kind"], "refresh": REFRESH_MS}
        if request.query_params.get("live") == "1":
            return self.board.page(request, "_history_charts.html", **context)
        tasks = sorted(t.name for t in app.tasks.values() if t.options.queue == name) \
            if kind == "queue" else []
        task = app.tasks.get(name) if kind == "task" else None
        return self.board.page(request, "history_charts.html", tasks=tasks,
                               queue=task.options.queue if task else None, **context)
