"""Routes of the dashboard: overview, jobs, one job, dead jobs, actions, /metrics.

Built on Starlette and Jinja2 (autoescaping on: every value shown is escaped).
Database calls run in the thread pool; each page reads a handful of cheap queries.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

import jinja2
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from shiftwork.core.bounds import MAX_ID
from shiftwork.core.errors import ConfigurationError, JobNotFoundError, ShiftworkError
from shiftwork.core.memory import format_size
from shiftwork.core.names import check_queue, schedule_name, schedule_ref
from shiftwork.core.safetext import escape_controls
from shiftwork.core.states import JobState
from shiftwork.jobs.hold import EDITABLE
from shiftwork.observe.table_health import TableHealthCache, format_bytes, table_problems
from shiftwork.observe.text import format_age, format_seconds, format_time
from shiftwork.observe.views import overview
from shiftwork.web.chart import minute_chart
from shiftwork.web.forms import (
    FORM_SCOPE_KEY,
    bad_text,
    declared_too_large,
    read_form,
    too_large,
)
from shiftwork.web.history import history_routes
from shiftwork.web.history_charts import history_chart_routes
from shiftwork.web.job_edit import edit_fields
from shiftwork.web.jobs_console import console_routes, who
from shiftwork.web.login_limit import DEFAULT_MAX_FAILURES, DEFAULT_WINDOW, FailureLimiter, shared
from shiftwork.web.paging import page_of
from shiftwork.web.progress_view import progress_view
from shiftwork.web.security import (
    DEVICE_COOKIE,
    DEVICE_MAX_AGE,
    SESSION_COOKIE,
    Authenticate,
    Guard,
)
from shiftwork.web.serve import PEER
from shiftwork.web.sessions import DEFAULT_SESSION_MAX_AGE, Sessions

if TYPE_CHECKING:
    from shiftwork.app import App
    from shiftwork.model.records import Job

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
#: Sent only over https (a browser ignores it on http): stay on https for a year.
HSTS = "max-age=31536000"
_FORM = FORM_SCOPE_KEY
#: Notices the dashboard shows come back signed from its own redirects (``?msg=&sig=``).
_NOTICE = "notice"


def create_dashboard(app: App, *, token: str | None = None,
                     authenticate: Authenticate | None = None,
                     title: str = "shiftwork",
                     session_max_age: float = DEFAULT_SESSION_MAX_AGE,
                     max_auth_failures: int = DEFAULT_MAX_FAILURES,
                     auth_failure_window: float = DEFAULT_WINDOW,
                     public_health: bool = False,
                     login_url: str | None = None, logout_url: str | None = None,
                     allowed_hosts: Sequence[str] | None = None) -> Starlette:
    """An ASGI app showing ``app``. Give a login ``token``, or ``authenticate(request)``.

    ``public_health``: ``GET /health`` answers without a login, for load balancers and
    Kubernetes probes: ``ok`` (200) or ``not ok`` (503) and nothing more; a logged-in
    request still gets the problems listed.

    ``session_max_age``: seconds a login lasts (a working day by default).
    ``max_auth_failures`` wrong tokens (login or Bearer) from one client address within
    ``auth_failure_window`` seconds make further attempts from it answer 429.

    With ``authenticate``, the host application logs people in and out: ``login_url``
    is where a logged-out browser is sent (with ``?next=`` the page it asked for),
    ``logout_url`` what the "Log out" link opens (no link without it).

    ``allowed_hosts``: the host names the dashboard answers to (``"*.example.com"``
    matches subdomains); any other ``Host`` header gets 400. Default: any.
    """
    if not token and authenticate is None:
        raise ConfigurationError("the dashboard needs a login token (--token-file or "
                                 "SHIFTWORK_DASHBOARD_TOKEN) or an authenticate(request) "
                                 "hook from your application")
    if token is not None and len(token) < 8:
        raise ConfigurationError("dashboard token too short: use at least 8 characters")
    for name, value in (("session_max_age", session_max_age),
                        ("max_auth_failures", max_auth_failures),
                        ("auth_failure_window", auth_failure_window)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ConfigurationError(f"dashboard {name} must be a number > 0, got {value!r}")
    for name, url in (("login_url", login_url), ("logout_url", logout_url)):
        if url is not None and (authenticate is None or not isinstance(url, str) or not url
                                or bad_text(url)):
            raise ConfigurationError(f"dashboard {name} is for authenticate= (the host "
                                     f"application's own login), a URL; got {url!r}")
    hosts = None if allowed_hosts is None else list(allowed_hosts)
    if hosts is not None and (not hosts or not all(isinstance(h, str) and h and ":" not in h
                                                   for h in hosts)):
        raise ConfigurationError(f"dashboard allowed_hosts must be host names (no port), "
                                 f"e.g. ['jobs.example.com']; got {allowed_hosts!r}")
    guard = Guard(token, authenticate, Sessions(app.clock, float(session_max_age)))
    limiter = FailureLimiter(app.clock, int(max_auth_failures), float(auth_failure_window))
    return Dashboard(app, guard, limiter, title, public_health, login_url=login_url,
                     logout_url=logout_url, allowed_hosts=hosts).asgi


def route_path(scope: Any) -> str:
    """The path the router matches, from the ASGI scope itself (never from the Host
    header): the request's path less the prefix the dashboard is mounted under."""
    path: str = scope.get("path", "")
    root: str = scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root):]
    return path or "/"


def mount_root(scope: Any) -> str:
    """The prefix the dashboard is mounted under (the ASGI ``root_path``: a Starlette or
    FastAPI mount, uvicorn's ``--root-path``), without a trailing slash; every link, form,
    redirect and cookie of the dashboard starts with it ("" at the top of a site)."""
    root: str = scope.get("root_path", "")
    return root.rstrip("/")


def is_public(path: str) -> bool:
    """The login page itself and the static files: all that answers without a login."""
    return path == "/login" or path.startswith("/static/")


def client_address(request: Request) -> str:
    """The client's address; behind a trusted proxy, the one it reported (uvicorn's
    ``--proxy-headers`` rewrites the scope's client)."""
    return request.client.host if request.client else "unknown"


def attempt_keys(request: Request, kind: str, device: str | None = None) -> tuple[str, ...]:
    """What a token attempt (``kind``: login or bearer) is counted under: the browser's
    device cookie alone, or else the client address and, behind a proxy, the proxy's
    own address (which may claim any client address; a shared budget, for all its
    clients). The first key is the one a success clears."""
    if device is not None:
        return (f"device:{device}",)
    client = client_address(request)
    peer = request.scope.get(PEER)
    return (f"{kind}:{client}",) + ((shared(f"{kind}:{peer}"),) if peer and peer != client
                                    else ())


def host_allowed(request: Request, allowed: Sequence[str]) -> bool:
    """The Host header names one of ``allowed`` (as Starlette's TrustedHostMiddleware)."""
    host = request.headers.get("host", "").split(":")[0].lower()
    return any(pattern == "*" or host == pattern.lower()
               or (pattern.startswith("*.") and host.endswith(pattern[1:].lower()))
               for pattern in allowed)


def path_segment(value: object) -> str:
    """``value`` as one URL path segment: every character but letters, digits and
    ``_.-~`` percent-encoded, ``/`` too (Jinja's ``urlencode`` leaves ``/``, and a browser
    then resolves a ``..`` in the data). Every segment a template builds from data goes
    through this filter (``| segment``)."""
    return quote(str(value), safe="")


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, default=str)


class Dashboard:
    def __init__(self, app: App, guard: Guard, limiter: FailureLimiter, title: str,
                 public_health: bool = False, *, login_url: str | None = None,
                 logout_url: str | None = None,
                 allowed_hosts: list[str] | None = None) -> None:
        self.app = app
        self.public_health = public_health
        self.guard = guard
        self.limiter = limiter
        self.title = title
        self.login_url = login_url
        self.logout_url = logout_url
        self.allowed_hosts = allowed_hosts
        self.env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"),
                                      autoescape=True, undefined=jinja2.StrictUndefined)
        self.env.filters["age"] = format_age
        self.env.filters["runtime"] = format_seconds
        self.env.filters["json"] = _json
        self.env.filters["compact"] = lambda v: json.dumps(v, default=str, ensure_ascii=False)
        self.env.filters["when"] = format_time
        self.env.filters["segment"] = path_segment
        self.env.filters["schedule_ref"] = schedule_ref
        self.env.filters["size"] = format_size
        self.env.filters["bytes"] = format_bytes
        self.table_health = TableHealthCache(app)  # the overview's, read once a period
        routes = [
            Route("/", self.index), Route("/login", self.login, methods=["GET", "POST"]),
            Route("/logout", self.logout, methods=["POST"]),
            *console_routes(self),  # /jobs, /dead, /jobs/bulk (jobs_console.py)
            Route("/jobs/{job_id:int}", self.job),
            Route("/jobs/{job_id:int}/{action}", self.job_action, methods=["POST"]),
            Route("/groups/{group_id:int}", self.group),
            Route("/dead", self.dead_bulk, methods=["POST"]),
            Route("/queues/{queue}/{action}", self.queue_action, methods=["POST"]),
            Route("/schedules/{name}/trigger", self.schedule_trigger, methods=["POST"]),
            Route("/schedules", self.schedule_add, methods=["POST"]),
            Route("/schedules/{name}/{action}", self.schedule_action, methods=["POST"]),
            Route("/metrics", self.metrics), Route("/health", self.health),
            *history_routes(self),  # workflows, a workflow, a schedule's page (web/history.py)
            *history_chart_routes(self),  # a queue's or task's 24 h (web/history_charts.py)
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ]
        self.asgi = Starlette(routes=routes, middleware=[Middleware(BaseHTTPMiddleware,
                                                                    dispatch=self.gate)],
                              exception_handlers={Exception: self.server_error})
        # Starlette's own "/jobs/" redirect is an absolute URL built from the Host header;
        # the gate answers a trailing slash itself, with a path.
        self.asgi.router.redirect_slashes = False
        self._metrics: Any = None

    # -- the gate: auth, CSRF, headers ------------------------------------------------------

    async def gate(self, request: Request,
                   call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        # Decided on the scope's own path: request.url is rebuilt from the Host header,
        # which the client chooses (a Host of "x/login?" once made /metrics public).
        path = route_path(request.scope)
        refused = self._refuse_malformed(request, path) or self._without_slash(request, path)
        if refused is not None:
            return self._headers(request, refused)
        if not is_public(path):
            bearer = self.guard.bearer(request)
            keys = attempt_keys(request, "bearer")
            if bearer is not None:
                wait = self.limiter.retry_after(*keys)
                if wait is not None:
                    return self._headers(request, self._too_many(wait))
            if not await run_in_threadpool(self.guard.is_authenticated, request):
                if self.public_health and path == "/health" and request.method == "GET":
                    # Open to probes, so it says nothing a stranger should read.
                    return self._headers(request, await self.health_verdict())
                if bearer is not None:
                    self.limiter.failed(*keys)
                return self._headers(request, self.logged_out(request))
            if request.method == "POST":
                form = await read_form(request)
                if isinstance(form, Response):
                    return self._headers(request, form)
                request.scope[_FORM] = form  # the body is read once; endpoints use it from here
                why = self.guard.check_post(request, form)
                if why is not None:
                    return self._headers(request, PlainTextResponse(why, status_code=403))
        cookie = None
        if (self.guard.authenticate is not None and not is_public(path)
                and self.guard.session_id(request) is None):
            # Only once the host application said who this is: binds CSRF tokens to the
            # browser (no token is handed to a visitor the host has not let in).
            cookie = self.guard.start_session(request)
        response = await call_next(request)
        if cookie is not None:
            self._set_session(request, response, cookie)
        return self._headers(request, response)

    def _refuse_malformed(self, request: Request, path: str) -> Response | None:
        """400 for what no page of ours accepts, before anything reads it."""
        if self.allowed_hosts is not None and not host_allowed(request, self.allowed_hosts):
            return PlainTextResponse("unknown Host header", status_code=400)
        if bad_text(path):
            return PlainTextResponse("control characters in the path", status_code=400)
        for key, value in request.query_params.multi_items():
            if bad_text(key) or bad_text(value):
                return PlainTextResponse(f"control characters in query parameter {key!r}",
                                         status_code=400)
        if request.method == "POST" and declared_too_large(request):
            return too_large()
        return None

    @staticmethod
    def _without_slash(request: Request, path: str) -> Response | None:
        """``/jobs/`` to ``/jobs``, by a path (never a URL built from the Host header);
        not for ``//x/`` or ``/\\x/``, which a browser would read as another site."""
        if (request.method not in ("GET", "HEAD") or path == "/" or not path.endswith("/")
                or path.startswith("/static/") or path[1:2] in ("/", "\\")):
            return None
        query = request.scope.get("query_string", b"").decode("latin-1")
        return RedirectResponse(mount_root(request.scope) + path.rstrip("/")
                                + (f"?{query}" if query else ""), status_code=307)

    def logged_out(self, request: Request) -> Response:
        """What a request without a login gets: the token form (401), or with the host
        application's login, its login page for a browser (303) and a 401 for scripts."""
        if self.guard.authenticate is None:
            return self.page(request, "login.html", status=401)
        if (self.login_url is not None and request.method in ("GET", "HEAD")
                and "text/html" in request.headers.get("accept", "")):
            asked = request.scope.get("path", "/")
            query = request.scope.get("query_string", b"").decode("latin-1")
            here = asked + (f"?{query}" if query else "")
            joiner = "&" if "?" in self.login_url else "?"
            return RedirectResponse(f"{self.login_url}{joiner}{urlencode({'next': here})}",
                                    status_code=303)
        return self.page(request, "login.html", status=401)

    async def server_error(self, request: Request, exc: Exception) -> Response:
        """A 500 with the security headers (the exception is still logged by the server)."""
        return self._headers(request, PlainTextResponse("Internal Server Error",
                                                        status_code=500))

    @staticmethod
    def _too_many(wait: int) -> Response:
        return PlainTextResponse(
            f"too many failed login attempts from your address: try again in {wait} s",
            status_code=429, headers={"Retry-After": str(wait)})

    @staticmethod
    def _https(request: Request) -> bool:
        return request.scope.get("scheme") == "https"

    def _headers(self, request: Request, response: Response) -> Response:
        for key, value in SECURITY_HEADERS.items():
            response.headers.setdefault(key, value)
        if self._https(request):
            response.headers.setdefault("Strict-Transport-Security", HSTS)
        return response

    def _cookie(self, request: Request, response: Response, name: str, value: str,
                max_age: int) -> None:
        response.set_cookie(name, value, httponly=True, samesite="strict",
                            path=mount_root(request.scope) or "/",
                            secure=self._https(request), max_age=max_age)

    def _set_session(self, request: Request, response: Response,
                     cookie: str | None = None) -> None:
        self._cookie(request, response, SESSION_COOKIE, cookie or self.guard.new_session(),
                     int(self.guard.sessions.max_age))

    def notice(self, request: Request) -> str | None:
        """The ``msg`` of one of our own redirects; anything else is not shown."""
        message = request.query_params.get("msg")
        signature = request.query_params.get("sig", "")
        if message and self.guard.verify(_NOTICE, message, signature):
            return message
        return None

    def page(self, request: Request, template: str, status: int = 200,
             **context: Any) -> HTMLResponse:
        context.setdefault("error", None)
        host_login = self.guard.authenticate is not None
        body = self.env.get_template(template).render(
            request=request, title=self.title, csrf=self.guard.csrf_token(request),
            message=self.notice(request), path=route_path(request.scope),
            root=mount_root(request.scope), host_login=host_login,
            # The host's own logout page, or our form (token mode), or nothing.
            logout=self.logout_url if host_login else "form",
            can_pause=callable(getattr(self.app, "pause_queue", None)), **context)
        return HTMLResponse(body, status_code=status)

    def back(self, request: Request, to: str, message: str) -> RedirectResponse:
        message = escape_controls(message)  # a stored name may hold any character
        query = urlencode({"msg": message, "sig": self.guard.sign(_NOTICE, message)})
        return self.redirect(request, f"{to}{'&' if '?' in to else '?'}{query}")

    @staticmethod
    def redirect(request: Request, to: str) -> RedirectResponse:
        """A 303 to one of our own pages (``to`` from the dashboard's root), under its
        mount prefix."""
        return RedirectResponse(mount_root(request.scope) + to, status_code=303)

    # -- login ------------------------------------------------------------------------

    async def login(self, request: Request) -> Response:
        if self.guard.authenticate is not None:
            # The host application logs people in; our token form can never work here.
            if self.login_url is not None:
                return RedirectResponse(self.login_url, status_code=303)
            return self.redirect(request, "/")
        if request.method != "POST":
            # A token in a URL would sit in histories and access logs: only the form logs in.
            error = ("log in with the form: a token in the URL is not accepted"
                     if "token" in request.query_params else None)
            return self.page(request, "login.html", status=400 if error else 200,
                             error=error)
        # Before anything is counted: another site's form or fetch must not lock us out.
        foreign = self.guard.foreign_origin(request)
        if foreign is not None:
            return PlainTextResponse(foreign, status_code=403)
        keys = attempt_keys(request, "login", self.guard.device_id(request))
        wait = self.limiter.retry_after(*keys)
        if wait is not None:
            return self._too_many(wait)
        form = await read_form(request)
        if isinstance(form, Response):
            return form
        given = form.get("token")
        if not self.guard.check_token(given if isinstance(given, str) else None):
            self.limiter.failed(*keys)
            return self.page(request, "login.html", status=401, error="wrong token")
        self.limiter.succeeded(keys[0])
        response = self.redirect(request, "/")
        self._set_session(request, response)
        self._cookie(request, response, DEVICE_COOKIE, self.guard.new_device(), DEVICE_MAX_AGE)
        return response

    async def logout(self, request: Request) -> Response:
        if self.guard.authenticate is not None:
            # Our cookie only binds CSRF tokens: logging out is the host application's.
            if self.logout_url is not None:
                return RedirectResponse(self.logout_url, status_code=303)
            return PlainTextResponse("log out through the application this dashboard is "
                                     "part of", status_code=404)
        self.guard.end_session(request)  # the cookie is dead server-side, copied or not
        response = self.redirect(request, "/login")
        response.delete_cookie(SESSION_COOKIE, path=mount_root(request.scope) or "/",
                               secure=self._https(request),
                               httponly=True, samesite="strict")
        return response

    # -- pages ------------------------------------------------------------------------

    def _table(self) -> tuple[Any, list[Any]]:
        try:
            table = self.table_health.get()
        except ShiftworkError:
            return None, []
        return table, table_problems(self.app.settings, table)

    async def index(self, request: Request) -> Response:
        view = await run_in_threadpool(overview, self.app)
        table, table_warnings = await run_in_threadpool(self._table)
        charts = {row.stats.queue: minute_chart(row.last_hour, view.now) for row in view.queues}
        every = [m for row in view.queues for m in row.last_hour]
        return self.page(request, "overview.html", view=view, charts=charts, table=table,
                         table_problems=table_warnings,
                         total=minute_chart(every, view.now, width=720, height=120,
                                            axes=True),
                         can_trigger=self.app.observers.can_trigger(),
                         can_manage=callable(getattr(self.app.schedules, "add", None)),
                         task_names=self.app.task_names())

    async def job(self, request: Request) -> Response:
        if request.path_params["job_id"] > MAX_ID:
            return self.page(request, "error.html", status=404, error="no such job")
        try:
            job = await run_in_threadpool(self.app.get_job, request.path_params["job_id"])
        except JobNotFoundError as exc:
            return self.page(request, "error.html", status=404, error=str(exc))
        # A workflow's job page shows its status and step timeline.
        workflow = await run_in_threadpool(self.app.get_workflow, job.id)
        steps = await run_in_threadpool(self.app.workflow_history, job.id) if workflow else []
        parents, children = await run_in_threadpool(self.app.store.deps.links_of, job.id)
        member_of, callback_of = await run_in_threadpool(self.app.store.deps.groups_of_job, job.id)
        q = request.query_params  # a page of each long list: 50,000 dependants once made 4 MB
        lines = await run_in_threadpool(self.app.store.job_logs.list_lines, job.id, job.attempt,
                                        (0, 0), 200) if job.attempt else []  # its latest logs
        return self.page(request, "job.html", job=job, workflow=workflow,
                         steps=page_of(steps, q, "steps"), parents=page_of(parents, q, "parents"),
                         children=page_of(children, q, "children"), member_of=member_of,
                         callback_of=callback_of, lines=lines, attempt=job.attempt,
                         progress=progress_view(job, self.app.clock.now()),
                         retryable=job.state in (
            JobState.DEAD, JobState.CANCELLED, JobState.SCHEDULED, JobState.RETRYING),
            cancellable=job.state in (JobState.SCHEDULED, JobState.AVAILABLE, JobState.RETRYING,
                                      JobState.RUNNING, JobState.HELD),
            holdable=job.state in EDITABLE - {JobState.HELD} or (
                job.state is JobState.RUNNING and not job.hold_requested),
            releasable=job.state is JobState.HELD or job.hold_requested,
            editable=job.state in EDITABLE)

    async def group(self, request: Request) -> Response:
        group_id = request.path_params["group_id"]
        if group_id > MAX_ID:
            return self.page(request, "error.html", status=404, error="no such group")
        try:
            info = await run_in_threadpool(self.app.store.deps.group_get, group_id)
        except JobNotFoundError as exc:
            return self.page(request, "error.html", status=404, error=str(exc))
        members = await run_in_threadpool(self.app.store.deps.group_members, group_id)
        shown = [await run_in_threadpool(self.app.get_job, m) for m in members[:50]]
        callback = None if info.callback_id is None else await run_in_threadpool(
            self.app.get_job, info.callback_id)
        return self.page(request, "group.html", group=info, members=shown,
                         more=len(members) - len(shown), callback=callback)

    # -- actions ------------------------------------------------------------------------

    async def job_action(self, request: Request) -> Response:
        job_id: int = request.path_params["job_id"]
        action = request.path_params["action"]
        if job_id > MAX_ID:
            return PlainTextResponse("no such job", status_code=404)
        to = f"/jobs/{job_id}"
        try:
            if action == "retry":
                job = await run_in_threadpool(self.app.retry_job, job_id)
                return self.back(request, to, f"job {job_id} is {job.state.value} again")
            if action == "cancel":
                job = await run_in_threadpool(self.app.cancel_job, job_id)
                note = " (cancel requested; its worker stops it)" \
                    if job.state is JobState.RUNNING else ""
                return self.back(request, to, f"job {job_id} is {job.state.value}{note}")
            if action in ("hold", "release", "run_now", "update"):
                job = await run_in_threadpool(self._hold_action, request, job_id, action)
                note = " (hold requested: held if its attempt would run again)" \
                    if job.state is JobState.RUNNING and job.hold_requested else ""
                return self.back(request, to, f"job {job_id} is {job.state.value}{note}")
            if action == "discard":
                done = await run_in_threadpool(self.app.store.observe.jobs_discard, [job_id])
                if done:
                    return self.back(request, "/dead", f"job {job_id} discarded (deleted)")
                return self.back(request, to,
                                 f"job {job_id} was not discarded: only dead jobs can be")
        except ShiftworkError as exc:
            return self.back(request, to, str(exc))
        return PlainTextResponse(f"unknown action {action!r}", status_code=404)

    def _hold_action(self, request: Request, job_id: int, action: str) -> Job:
        """Hold, release, run now or update (jobs/hold.py), audited as the signed-in user."""
        by = who(request)
        if action == "hold":
            return self.app.hold(job_id, who=by)
        if action == "release":
            return self.app.release(job_id, who=by)
        if action == "run_now":
            return self.app.run_now(job_id, who=by)
        form = request.scope[_FORM]
        return self.app.update_job(job_id, who=by, **edit_fields(form))

    async def dead_bulk(self, request: Request) -> Response:
        form = request.scope[_FORM]
        action = form.get("action")
        try:
            ids = sorted({int(str(v)) for v in form.getlist("ids")})
        except ValueError:
            return PlainTextResponse("ids must be job numbers", status_code=400)
        if any(not 0 < i <= MAX_ID for i in ids) or len(ids) > 1000:
            return PlainTextResponse("ids must be at most 1000 job numbers", status_code=400)
        if not ids:
            return self.back(request, "/dead", "select some dead jobs first")
        if action == "discard":
            done = await run_in_threadpool(self.app.store.observe.jobs_discard, ids)
            return self.back(request, "/dead", f"discarded {len(done)} of {len(ids)} jobs")
        if action == "retry":
            retried, failed = 0, []
            for job_id in ids:
                try:
                    await run_in_threadpool(self.app.retry_job, job_id)
                    retried += 1
                except ShiftworkError as exc:
                    failed.append(str(exc))
            note = f"; {len(failed)} could not be: {failed[0]}" if failed else ""
            return self.back(request, "/dead", f"retried {retried} jobs{note}")
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
            return self.back(request, "/", "this version of shiftwork cannot pause queues")
        try:
            await run_in_threadpool(method, queue)
        except ShiftworkError as exc:
            return self.back(request, "/", str(exc))
        done = "paused" if action == "pause" else "resumed"
        return self.back(request, "/", f"queue {queue} {done}")

    @staticmethod
    def schedule_back(request: Request) -> str:
        """Where a schedule action's notice is shown: the schedule's own page when the
        form came from it (``from=schedule``), else the overview."""
        if request.scope[_FORM].get("from") == "schedule":
            return "/schedules/" + path_segment(request.path_params["name"])
        return "/"

    async def schedule_trigger(self, request: Request) -> Response:
        to = self.schedule_back(request)
        try:
            name = schedule_name(request.path_params["name"])  # a name, or an id (~...)
            result = await run_in_threadpool(self.app.observers.trigger, name)
        except ShiftworkError as exc:
            return self.back(request, to, str(exc))
        job_id = getattr(result, "id", result)
        return self.back(request, to, f"schedule {name} triggered"
                         + (f": job {job_id}" if job_id else ""))

    async def schedule_add(self, request: Request) -> Response:
        """The add form: a run-time schedule (app.schedules.add), arguments as JSON."""
        from shiftwork.schedules.runtime import form_to_schedule

        form = request.scope[_FORM]
        try:
            name = await run_in_threadpool(form_to_schedule, self.app, dict(form.items()))
        except ShiftworkError as exc:
            return self.back(request, "/", f"schedule not added: {exc}")
        return self.back(request, "/", f"schedule {name} added")

    async def schedule_action(self, request: Request) -> Response:
        action = request.path_params["action"]
        try:
            name = schedule_name(request.path_params["name"])  # a name, or an id (~...)
        except ConfigurationError as exc:
            return PlainTextResponse(str(exc), status_code=404)
        book = self.app.schedules
        methods: dict[str, Callable[[str], Any]] = {
            "pause": book.pause, "resume": book.resume, "remove": book.remove}
        if action not in methods:
            return PlainTextResponse("action must be pause, resume or remove", status_code=404)
        to = self.schedule_back(request)
        try:
            await run_in_threadpool(methods[action], name)
        except ShiftworkError as exc:
            return self.back(request, to, str(exc))
        done = {"pause": "paused", "resume": "resumed", "remove": "removed"}[action]
        return self.back(request, to, f"schedule {name} {done}")

    # -- machine-readable ----------------------------------------------------------------

    async def metrics(self, request: Request) -> Response:
        from shiftwork.observe.metrics import CONTENT_TYPE, Metrics

        if self._metrics is None:
            self._metrics = Metrics(self.app)
        body = await run_in_threadpool(self._metrics.exposition)
        return Response(body, media_type=CONTENT_TYPE)

    async def health_verdict(self) -> Response:
        """``ok`` or ``not ok``: no queue names, counts or messages."""
        from shiftwork.observe.health import check_health

        report = await run_in_threadpool(check_health, self.app)
        return PlainTextResponse("ok\n" if report.ok else "not ok\n",
                                 status_code=200 if report.ok else 503)

    async def health(self, request: Request) -> Response:
        from shiftwork.observe.health import check_health

        report = await run_in_threadpool(check_health, self.app)
        # The problems first, then the warnings (which leave the answer 200), as
        # `shiftwork health` prints them.
        lines = [f"{p.kind}: {p.message}\n" for p in report.problems]
        lines += [f"warning {p.kind}: {p.message}\n" for p in report.warnings]
        text = "".join(lines) if lines else "ok\n"
        return PlainTextResponse(text, status_code=200 if report.ok else 503)
