"""Routes of the dashboard: overview, jobs, one job, dead jobs, actions, /metrics.

Built on Starlette and Jinja2 (autoescaping on: every value shown is escaped).
Database calls run in the thread pool; each page reads a handful of cheap queries.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import jinja2
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..errors import ConfigurationError, JobNotFoundError, ShiftworkError
from ..names import check_queue
from ..observe.top import format_age
from ..observe.views import overview
from ..states import JobState
from .chart import minute_chart
from .security import SESSION_COOKIE, Authenticate, Guard

if TYPE_CHECKING:
    from ..app import App

HERE = Path(__file__).parent
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; "
                               "script-src 'self'; frame-ancestors 'none'; form-action 'self'; "
                               "base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
PUBLIC = ("/login", "/static/")
_FORM = "shiftwork.form"


def create_dashboard(app: App, *, token: str | None = None,
                     authenticate: Authenticate | None = None,
                     title: str = "shiftwork") -> Starlette:
    """An ASGI app showing ``app``. Give a login ``token``, or ``authenticate(request)``."""
    if not token and authenticate is None:
        raise ConfigurationError("the dashboard needs a login token (--token) or an "
                                 "authenticate(request) hook from your application")
    if token is not None and len(token) < 8:
        raise ConfigurationError("dashboard token too short: use at least 8 characters")
    return Dashboard(app, Guard(token, authenticate), title).asgi


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, default=str)


class Dashboard:
    def __init__(self, app: App, guard: Guard, title: str) -> None:
        self.app = app
        self.guard = guard
        self.title = title
        self.env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"),
                                      autoescape=True, undefined=jinja2.StrictUndefined)
        self.env.filters["age"] = format_age
        self.env.filters["json"] = _json
        self.env.filters["compact"] = lambda v: json.dumps(v, default=str, ensure_ascii=False)
        self.env.filters["when"] = lambda d: f"{d:%Y-%m-%d %H:%M:%S}" if d else "-"
        routes = [
            Route("/", self.index), Route("/login", self.login, methods=["GET", "POST"]),
            Route("/logout", self.logout, methods=["POST"]),
            Route("/jobs", self.jobs), Route("/jobs/{job_id:int}", self.job),
            Route("/jobs/{job_id:int}/{action}", self.job_action, methods=["POST"]),
            Route("/dead", self.dead), Route("/dead", self.dead_bulk, methods=["POST"]),
            Route("/queues/{queue}/{action}", self.queue_action, methods=["POST"]),
            Route("/schedules/{name}/trigger", self.schedule_trigger, methods=["POST"]),
            Route("/metrics", self.metrics), Route("/health", self.health),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ]
        self.asgi = Starlette(routes=routes, middleware=[Middleware(BaseHTTPMiddleware,
                                                                    dispatch=self.gate)])
        self._metrics: Any = None

    # -- the gate: auth, CSRF, headers ------------------------------------------------------

    async def gate(self, request: Request,
                   call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        path = request.url.path
        if not path.startswith(PUBLIC):
            if not await run_in_threadpool(self.guard.is_authenticated, request):
                response: Response = self.page(request, "login.html", status=401,
                                               error="log in with the dashboard token")
                return self._headers(response)
            if request.method == "POST":
                form = await request.form()
                request.scope[_FORM] = form  # the body is read once; endpoints use it from here
                why = self.guard.check_post(request, form)
                if why is not None:
                    return self._headers(PlainTextResponse(why, status_code=403))
        cookie = None
        if self.guard.authenticate is not None and self.guard.session_id(request) is None:
            cookie = self.guard.start_session(request)  # binds CSRF tokens to this browser
        response = await call_next(request)
        if cookie is not None:
            self._set_session(response, cookie)
        return self._headers(response)

    def _headers(self, response: Response) -> Response:
        for key, value in SECURITY_HEADERS.items():
            response.headers.setdefault(key, value)
        return response

    def _set_session(self, response: Response, cookie: str | None = None) -> None:
        response.set_cookie(SESSION_COOKIE, cookie or self.guard.new_session(), httponly=True,
                            samesite="strict", path="/")

    def page(self, request: Request, template: str, status: int = 200,
             **context: Any) -> HTMLResponse:
        context.setdefault("error", None)
        body = self.env.get_template(template).render(
            request=request, title=self.title, csrf=self.guard.csrf_token(request),
            message=request.query_params.get("msg"), path=request.url.path,
            can_pause=callable(getattr(self.app, "pause_queue", None)), **context)
        return HTMLResponse(body, status_code=status)

    @staticmethod
    def back(to: str, message: str) -> RedirectResponse:
        return RedirectResponse(f"{to}{'&' if '?' in to else '?'}{urlencode({'msg': message})}",
                                status_code=303)

    # -- login ------------------------------------------------------------------------

    async def login(self, request: Request) -> Response:
        if self.guard.authenticate is not None:
            return RedirectResponse("/", status_code=303)
        given = request.query_params.get("token")
        if request.method == "POST":
            form = await request.form()
            given = form.get("token")  # type: ignore[assignment]
        if given is None:
            return self._headers(self.page(request, "login.html"))
        if not self.guard.check_token(given):
            return self._headers(self.page(request, "login.html", status=401,
                                           error="wrong token"))
        response = RedirectResponse("/", status_code=303)
        self._set_session(response)
        return self._headers(response)

    async def logout(self, request: Request) -> Response:
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response

    # -- pages ------------------------------------------------------------------------

    async def index(self, request: Request) -> Response:
        view = await run_in_threadpool(overview, self.app)
        charts = {row.stats.queue: minute_chart(row.last_hour, view.now) for row in view.queues}
        every = [m for row in view.queues for m in row.last_hour]
        return self.page(request, "overview.html", view=view, charts=charts,
                         total=minute_chart(every, view.now, width=720, height=90),
                         can_trigger=self.app.observers.can_trigger())

    async def jobs(self, request: Request) -> Response:
        q = request.query_params
        text = (q.get("q") or "").strip()
        state_name = q.get("state") or ""
        state = JobState(state_name) if state_name in JobState.__members__.values() else None
        queue = q.get("queue") or None
        found = await run_in_threadpool(self.app.store.jobs_search, text or None, state, queue,
                                        100)
        return self.page(request, "jobs.html", jobs=found, text=text, state=state_name,
                         queue=queue or "", states=[s.value for s in JobState])

    async def job(self, request: Request) -> Response:
        try:
            job = await run_in_threadpool(self.app.get_job, request.path_params["job_id"])
        except JobNotFoundError as exc:
            return self.page(request, "error.html", status=404, error=str(exc))
        # A workflow's job page shows its status and step timeline.
        workflow = await run_in_threadpool(self.app.get_workflow, job.id)
        steps = await run_in_threadpool(self.app.workflow_history, job.id) if workflow else []
        return self.page(request, "job.html", job=job, workflow=workflow, steps=steps,
                         retryable=job.state in (
            JobState.DEAD, JobState.CANCELLED, JobState.SCHEDULED, JobState.RETRYING),
            cancellable=job.state in (JobState.SCHEDULED, JobState.AVAILABLE, JobState.RETRYING,
                                      JobState.RUNNING))

    async def dead(self, request: Request) -> Response:
        queue = request.query_params.get("queue") or None
        found = await run_in_threadpool(self.app.store.jobs_search, None, JobState.DEAD, queue,
                                        200)
        return self.page(request, "dead.html", jobs=found, queue=queue or "")

    # -- actions ------------------------------------------------------------------------

    async def job_action(self, request: Request) -> Response:
        job_id: int = request.path_params["job_id"]
        action = request.path_params["action"]
        to = f"/jobs/{job_id}"
        try:
            if action == "retry":
                job = await run_in_threadpool(self.app.retry_job, job_id)
                return self.back(to, f"job {job_id} is {job.state.value} again")
            if action == "cancel":
                job = await run_in_threadpool(self.app.cancel_job, job_id)
                note = " (cancel requested; its worker stops it)" \
                    if job.state is JobState.RUNNING else ""
                return self.back(to, f"job {job_id} is {job.state.value}{note}")
            if action == "discard":
                done = await run_in_threadpool(self.app.store.jobs_discard, [job_id])
                if done:
                    return self.back("/dead", f"job {job_id} discarded (deleted)")
                return self.back(to, f"job {job_id} was not discarded: only dead jobs can be")
        except ShiftworkError as exc:
            return self.back(to, str(exc))
        return PlainTextResponse(f"unknown action {action!r}", status_code=404)

    async def dead_bulk(self, request: Request) -> Response:
        form = request.scope[_FORM]
        action = form.get("action")
        try:
            ids = sorted({int(str(v)) for v in form.getlist("ids")})
        except ValueError:
            return PlainTextResponse("ids must be job numbers", status_code=400)
        if not ids:
            return self.back("/dead", "select some dead jobs first")
        if action == "discard":
            done = await run_in_threadpool(self.app.store.jobs_discard, ids)
            return self.back("/dead", f"discarded {len(done)} of {len(ids)} jobs")
        if action == "retry":
            retried, failed = 0, []
            for job_id in ids:
                try:
                    await run_in_threadpool(self.app.retry_job, job_id)
                    retried += 1
                except ShiftworkError as exc:
                    failed.append(str(exc))
            note = f"; {len(failed)} could not be: {failed[0]}" if failed else ""
            return self.back("/dead", f"retried {retried} jobs{note}")
        return PlainTextResponse("action must be retry or discard", status_code=400)

    async def queue_action(self, request: Request) -> Response:
        action = request.path_params["action"]
        try:
            queue = check_queue(request.path_params["queue"])
        except ConfigurationError as exc:
            return PlainTextResponse(str(exc), status_code=400)
        if action not in ("pause", "resume"):
            return PlainTextResponse("action must be pause or resume", status_code=404)
        method = getattr(self.app, f"{action}_queue", None)
        if not callable(method):
            return self.back("/", "this version of shiftwork cannot pause queues")
        try:
            await run_in_threadpool(method, queue)
        except ShiftworkError as exc:
            return self.back("/", str(exc))
        return self.back("/", f"queue {queue} {'paused' if action == 'pause' else 'resumed'}")

    async def schedule_trigger(self, request: Request) -> Response:
        name = request.path_params["name"]
        try:
            result = await run_in_threadpool(self.app.observers.trigger, name)
        except ShiftworkError as exc:
            return self.back("/", str(exc))
        job_id = getattr(result, "id", result)
        return self.back("/", f"schedule {name} triggered" + (f": job {job_id}" if job_id else ""))

    # -- machine-readable ----------------------------------------------------------------

    async def metrics(self, request: Request) -> Response:
        from ..observe.metrics import CONTENT_TYPE, Metrics

        if self._metrics is None:
            self._metrics = Metrics(self.app)
        body = await run_in_threadpool(self._metrics.exposition)
        return Response(body, media_type=CONTENT_TYPE)

    async def health(self, request: Request) -> Response:
        from ..observe.health import check_health

        report = await run_in_threadpool(check_health, self.app)
        text = "ok\n" if report.ok else "".join(f"{p.kind}: {p.message}\n"
                                                for p in report.problems)
        return PlainTextResponse(text, status_code=200 if report.ok else 503)
