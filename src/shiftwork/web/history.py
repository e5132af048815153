"""The dashboard's history pages: the workflows list, a workflow's page (its timeline,
events, version and actions) and a schedule's page (its occurrences, next fires and
actions).

Registered by the dashboard (``history_routes``), behind its gate: login, CSRF on every
POST, escaped templates. Each list is keyset-paged (``before=``), so a page reads one
page of rows whatever the history holds.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Protocol
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from shiftwork.core.bounds import MAX_ID
from shiftwork.core.errors import ConfigurationError, JobNotFoundError, ShiftworkError
from shiftwork.core.names import schedule_name, schedule_ref
from shiftwork.core.states import FINAL, JobState, WorkflowStatus
from shiftwork.model.records import WorkflowLive
from shiftwork.web.forms import FORM_SCOPE_KEY
from shiftwork.web.workflow_view import duration, line_waiting_for, live_view
from shiftwork.workflow.fork import body_steps

PAGE = 50
#: The largest job id (a bigint); a larger number names no job.
STATUSES = [s.value for s in WorkflowStatus if s is not WorkflowStatus.PENDING]
#: Shown per workflow page: its newest events (and its newest updates).
EVENTS = 100
#: Log records per page of a job's logs (and on the job page, of its latest attempt).
LOG_PAGE = 500


class Board(Protocol):
    """What these pages need of the dashboard (dashboard.py's ``Dashboard``)."""

    app: Any

    def page(self, request: Request, template: str, status: int = 200,
             **context: Any) -> HTMLResponse: ...

    def back(self, request: Request, to: str, message: str) -> RedirectResponse: ...


def history_routes(board: Board) -> list[Route]:
    pages = HistoryPages(board)
    return [
        Route("/workflows", pages.workflows),
        Route("/workflows/{job_id:int}", pages.workflow),
        Route("/workflows/{job_id:int}/{action}", pages.workflow_action, methods=["POST"]),
        Route("/schedules/{name}", pages.schedule),
        Route("/jobs/{job_id:int}/logs", pages.job_logs),
    ]


def _before_id(request: Request) -> int | Response | None:
    given = request.query_params.get("before") or ""
    if not given:
        return None
    if not (given.isascii() and given.isdigit()) or not 0 < int(given) <= MAX_ID:
        return PlainTextResponse("before must be a workflow id (a whole number > 0)",
                                 status_code=400)
    return int(given)


def _before_time(request: Request) -> datetime | Response | None:
    given = request.query_params.get("before") or ""
    if not given:
        return None
    try:
        at = datetime.fromisoformat(given)
    except ValueError:
        at = None
    if at is None or at.tzinfo is None:
        return PlainTextResponse("before must be an instant in ISO 8601 with a time zone, "
                                 "e.g. 2026-12-01T02:00:00+00:00", status_code=400)
    return at.astimezone(UTC)


def _live(request: Request) -> bool:
    """A page's live refresh (static/app.js): its changing part alone, read with one
    query, so an open tab costs one query per refresh."""
    return request.query_params.get("live") == "1"


class HistoryPages:
    def __init__(self, board: Board) -> None:
        self.board = board

    @property
    def app(self) -> Any:
        return self.board.app

    # -- workflows ---------------------------------------------------------------------

    async def workflows(self, request: Request) -> Response:
        q = request.query_params
        before = _before_id(request)
        if isinstance(before, Response):
            return before
        status = q.get("status") or ""
        if status and status not in STATUSES and status not in JobState.__members__.values():
            return PlainTextResponse(f"status must be one of {', '.join(STATUSES)} (or a job "
                                     f"state), not {status!r}", status_code=400)
        name = (q.get("name") or "").strip()
        lines = await run_in_threadpool(self.app.store.workflows.page, status or None,
                                        name or None, before, PAGE + 1)
        now = self.app.clock.now()
        shown = lines[:PAGE]
        rows = [{"line": w, "waiting": line_waiting_for(w),
                 "duration": duration(w.started_at, w.finished_at, now)} for w in shown]
        return self.board.page(
            request, "_workflow_rows.html" if _live(request) else "workflows.html", rows=rows,
            chosen=status, name=name,
            statuses=STATUSES, first=before is None,
            next=shown[-1].id if len(lines) > PAGE else None)

    async def workflow(self, request: Request) -> Response:
        job_id = request.path_params["job_id"]
        if job_id > MAX_ID:
            return self.board.page(request, "error.html", status=404, error="no such workflow")
        now = self.app.clock.now()
        if _live(request):  # its timeline and what it waits for: one query per refresh
            live = await run_in_threadpool(self.app.store.workflows.live, job_id)
            if live is None:
                return PlainTextResponse("no such workflow", status_code=404)
            return self.board.page(request, "_workflow_live.html", view=live_view(live, now),
                                   job_id=job_id)
        try:
            job = await run_in_threadpool(self.app.get_job, job_id)
        except JobNotFoundError as exc:
            return self.board.page(request, "error.html", status=404, error=str(exc))
        run = await run_in_threadpool(self.app.get_workflow, job_id)
        steps = await run_in_threadpool(self.app.workflow_history, job_id)
        task = self.app.tasks.get(job.task)
        if run is None and not steps and getattr(task, "workflow_version", None) is None:
            return self.board.page(request, "error.html", status=404,
                                   error=f"job {job_id} is not a workflow")
        events = await run_in_threadpool(self.app.store.workflows.events_list, job_id, EVENTS)
        state = await run_in_threadpool(self.app.store.workflows.state_get, job_id)
        updates = await run_in_threadpool(self.app.store.workflows.updates_list, job_id, EVENTS)
        streams = await run_in_threadpool(self.app.workflows.streams, job_id)
        view = live_view(WorkflowLive(job.state, job.created_at, job.attempted_at,
                                      job.finished_at, job.run_at,
                                      run.status if run else None, steps), now)
        return self.board.page(
            request, "workflow.html", job=job, run=run, view=view, events=events,
            job_id=job_id, more_events=len(events) >= EVENTS, state=state, updates=updates,
            more_updates=len(updates) >= EVENTS,
            streams=streams,
            fork_from=_fork_places(steps) if run is not None and task is not None else [],
            cancellable=job.state in (JobState.SCHEDULED, JobState.AVAILABLE,
                                      JobState.RETRYING, JobState.RUNNING, JobState.HELD),
            retryable=job.state in (JobState.DEAD, JobState.CANCELLED))

    async def workflow_action(self, request: Request) -> Response:
        job_id: int = request.path_params["job_id"]
        action = request.path_params["action"]
        if job_id > MAX_ID:
            return PlainTextResponse("no such workflow", status_code=404)
        to = f"/workflows/{job_id}"
        try:
            if action == "cancel":
                job = await run_in_threadpool(self.app.cancel_job, job_id)
                return self.board.back(request, to, f"workflow {job_id}: cancel requested "
                                       f"(job {job.state.value}); it compensates, then ends")
            if action == "retry":
                job = await run_in_threadpool(self.app.retry_job, job_id)
                return self.board.back(request, to, f"workflow {job_id} is "
                                       f"{job.state.value} again")
            if action == "fork":
                where = _whole(str(request.scope[FORM_SCOPE_KEY].get("from_step", "")))
                if where is None:
                    return self.board.back(request, to, "fork: choose the step to run again "
                                           "from (its position)")
                new = await run_in_threadpool(self.app.workflows.fork, job_id, where)
                return self.board.back(request, f"/workflows/{new.id}",
                                       f"workflow {new.id}: forked from workflow {job_id} at "
                                       f"step {where}")
        except ShiftworkError as exc:
            return self.board.back(request, to, str(exc))
        return PlainTextResponse("action must be cancel, retry or fork", status_code=404)

    # -- schedules ---------------------------------------------------------------------

    async def schedule(self, request: Request) -> Response:
        from shiftwork.schedules.errors import UnknownScheduleError
        from shiftwork.schedules.stored import schedules_of

        try:
            name = schedule_name(request.path_params["name"])  # a name, or an id (~...)
        except ConfigurationError as exc:
            return self.board.page(request, "error.html", status=404, error=str(exc))
        before = _before_time(request)
        if isinstance(before, Response):
            return before
        if _live(request):  # the occurrences alone: one query per refresh
            runs = await run_in_threadpool(schedules_of(self.app.store).runs_history, name, None,
                                           PAGE)
            return self.board.page(request, "_occurrences.html", runs=runs)
        try:
            info = await run_in_threadpool(schedules_of(self.app.store).get, name)
        except UnknownScheduleError as exc:
            return self.board.page(request, "error.html", status=404, error=str(exc))
        runs = await run_in_threadpool(schedules_of(self.app.store).runs_history, name, before,
                                       PAGE + 1)
        upcoming: list[datetime] = []
        if info.removed_at is None:
            try:
                upcoming = await run_in_threadpool(self.app.schedules.preview, name, 5)
            except ShiftworkError:
                upcoming = []  # a cron this version cannot read: the page still shows
        shown = runs[:PAGE]
        return self.board.page(
            request, "schedule.html", info=info, ref=schedule_ref(name), runs=shown,
            upcoming=upcoming, first=before is None,
            next=shown[-1].run.fire_at.isoformat() if len(runs) > PAGE else None,
            can_trigger=self.app.observers.can_trigger(),
            can_manage=callable(getattr(self.app.schedules, "add", None)))

    # -- a job's logs --------------------------------------------------------------------

    async def job_logs(self, request: Request) -> Response:
        job_id = request.path_params["job_id"]
        q = request.query_params
        attempt = _whole(q.get("attempt") or "0")
        after = [_whole(p) for p in (q.get("after") or "0.0").split(".")]
        if attempt is None or len(after) != 2 or None in after:
            return PlainTextResponse("attempt must be a whole number and after "
                                     "ATTEMPT.SEQ (e.g. 2.500)", status_code=400)
        since = (after[0] or 0, after[1] or 0)
        if job_id > MAX_ID:
            return self.board.page(request, "error.html", status=404, error="no such job")
        if _live(request):  # the records alone: one query per refresh
            lines = await run_in_threadpool(self.app.store.job_logs.list_lines, job_id, attempt,
                                            since, LOG_PAGE)
            return self.board.page(request, "_job_logs.html", lines=lines, attempt=attempt)
        try:
            job = await run_in_threadpool(self.app.get_job, job_id)
        except JobNotFoundError as exc:
            return self.board.page(request, "error.html", status=404, error=str(exc))
        lines = await run_in_threadpool(self.app.store.job_logs.list_lines, job_id, attempt, since,
                                        LOG_PAGE + 1)
        shown = lines[:LOG_PAGE]
        following = None
        if len(lines) > LOG_PAGE:
            following = {"after": f"{shown[-1].attempt}.{shown[-1].seq}"}
            if attempt:
                following["attempt"] = str(attempt)
        live = None
        if job.state not in FINAL and since == (0, 0):
            live = f"{request.scope.get('root_path', '').rstrip('/')}/jobs/{job_id}/logs?" + \
                urlencode({"attempt": attempt, "live": 1})
        settings = self.app.settings
        return self.board.page(
            request, "job_logs.html", job=job, lines=shown, attempt=attempt, next=following,
            live=live, limits={"lines": settings.job_log_lines, "bytes": settings.job_log_bytes})


def _fork_places(steps: list[Any]) -> list[tuple[int, str]]:
    """Where a fork may start: each recorded body step, then the first place without a
    record (a failed step that recorded nothing), as (position, label)."""
    body = body_steps({s.name: s for s in steps})
    places = [(s.position or 0, f"{s.position} · {s.name}") for s in body]
    nxt = (body[-1].position or 0) + 1 if body else 0
    return [*places, (nxt, f"{nxt} · the first step without a record")]


def _whole(text: str) -> int | None:
    """A whole number from a query (None: not one, or too large to be an id or attempt)."""
    return int(text) if text.isascii() and text.isdigit() and len(text) < 19 else None
