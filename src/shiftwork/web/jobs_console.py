"""The dashboard's jobs console: the filtered jobs list with keyset pages and a total
(``/jobs``; ``/dead`` is the same list of dead jobs, with its own bulk form), and bulk
actions by filter (``/jobs/bulk``: a page that counts the matches and asks, then the
POST that runs them in batches, audited).

Every route sits behind the dashboard's gate (login, CSRF on POST, escaping templates).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from shiftwork.core.bounds import MAX_ID
from shiftwork.core.states import JobState
from shiftwork.jobs.bulk import ACTIONS, bulk_apply, bulk_filter
from shiftwork.jobs.sealing import open_job
from shiftwork.model.filter import (
    SORTS,
    FilterError,
    JobFilter,
    check_sort,
    parse_filter,
    task_hint,
)
from shiftwork.model.records import Job
from shiftwork.web.serve import PEER

if TYPE_CHECKING:
    from starlette.responses import RedirectResponse

    from shiftwork.app import App


class Dashboard(Protocol):
    """What the console needs of the dashboard: its App, its page renderer and its
    redirect with a notice (the dashboard module imports this one, not the reverse)."""

    app: App

    def page(self, request: Request, template: str, status: int = 200,
             **context: Any) -> Response: ...

    def back(self, request: Request, to: str, message: str) -> RedirectResponse: ...

#: Rows a page shows.
PAGE = 50
#: A total is counted exactly up to this many, then shown as "more than".
COUNT_CAP = 10_000
#: The page that asks before a bulk action counts further: it is opened once, on purpose.
BULK_COUNT_CAP = 1_000_000
#: The filter fields a URL may carry, in the order the form shows them.
FIELDS = ("state", "queue", "task", "tag", "error", "created_from", "created_to",
          "finished_from", "finished_to", "unique_key", "id")
_BULK_DONE = {"retry": "retried", "cancel": "cancelled", "delete": "deleted"}


def console_routes(dash: Dashboard) -> list[Route]:
    pages = JobsPages(dash)
    return [Route("/jobs", pages.jobs), Route("/dead", pages.dead),
            Route("/jobs/bulk", pages.bulk_confirm),
            Route("/jobs/bulk", pages.bulk_run, methods=["POST"])]


def read_filter(given: Any) -> JobFilter:
    """The filter of a URL or form. The old search box's ``q`` still works: a number is a
    job id, anything else a part of a task name."""
    fields = {name: given.get(name) for name in FIELDS}
    text = (given.get("q") or "").strip()
    if text:
        key = "id" if text.isascii() and text.isdigit() and len(text) < 19 else "task"
        fields[key] = fields[key] or text
    return parse_filter(fields)


def total_text(count: int, cap: int | None = None) -> str:
    """A count made up to ``cap`` + 1 (the list's COUNT_CAP by default), as shown."""
    cap = COUNT_CAP if cap is None else cap
    return f"more than {cap:,}" if count > cap else f"{count:,}"


def who(request: Request) -> str:
    """Who acted, for the audit: the host application's user if it named one, and the
    client's address (the proxy's too, behind one)."""
    user = request.scope.get("user")
    name = getattr(user, "display_name", None) or getattr(user, "username", None)
    client = request.client.host if request.client else "unknown"
    peer = request.scope.get(PEER)
    where = client + (f" via {peer}" if peer and peer != client else "")
    return f"{name} ({where})" if name else f"dashboard login ({where})"


class JobsPages:
    def __init__(self, dash: Dashboard) -> None:
        self.dash = dash
        self.app = dash.app

    async def jobs(self, request: Request) -> Response:
        return await self._list(request, "jobs.html")

    async def dead(self, request: Request) -> Response:
        return await self._list(request, "dead.html", states=(JobState.DEAD,))

    async def _list(self, request: Request, template: str,
                    states: tuple[JobState, ...] = ()) -> Response:
        q = request.query_params
        form = {name: q.get(name) or "" for name in FIELDS}
        form["sort"] = q.get("sort") or SORTS[0]
        try:
            f = read_filter(q)
            sort = check_sort(q.get("sort"))
            after = _after(q.get("after"))
        except FilterError as exc:
            return self.dash.page(request, template, status=400, error=str(exc), jobs=[],
                                  form=form, sorts=SORTS, total="0", more=None, first=None,
                                  hint="", bulk=[], audit=[], states=_states(), queue="")
        if states:
            f = replace(f, states=states)
        # sealed payloads opened with the App's keys, else "encrypted"
        found: list[Job] = [open_job(self.app.runtime.keys, j) for j in await run_in_threadpool(
            self.app.store.console.page, f, sort, after, PAGE + 1)]
        count = await run_in_threadpool(self.app.store.console.count_upto, f, COUNT_CAP + 1)
        here = f.query() if not states else {k: v for k, v in f.query().items()
                                             if k != "state"}
        if sort != SORTS[0]:
            here["sort"] = sort
        base = request.scope.get("root_path", "").rstrip("/") + \
            ("/dead" if states else "/jobs")
        more = (f"{base}?{urlencode({**here, 'after': str(found[PAGE - 1].id)})}"
                if len(found) > PAGE else None)
        first = f"{base}?{urlencode(here)}" if after is not None else None
        hint = ""
        if f.task and not count:
            hint = task_hint(f.task, await run_in_threadpool(self._known_tasks))
        bulk = [] if f.empty else [
            (action, f"{request.scope.get('root_path', '').rstrip('/')}/jobs/bulk?"
                     f"{urlencode({**f.query(), 'action': action})}")
            for action in ACTIONS if _allowed(action, f)]
        audit = await run_in_threadpool(self.app.store.console.bulk_actions_list, 5)
        return self.dash.page(request, template, jobs=found[:PAGE], form=form, sorts=SORTS,
                              total=total_text(count), more=more, first=first, hint=hint,
                              bulk=bulk, audit=audit, states=_states(),
                              queue=f.queue or "")

    def _known_tasks(self) -> list[str]:
        """Task names the code declares and recent jobs carry (what "did you mean" offers)."""
        recent = self.app.store.console.page(JobFilter(), limit=500)
        return sorted(set(self.app.task_names()) | {j.task for j in recent})

    async def bulk_confirm(self, request: Request) -> Response:
        q = request.query_params
        action = q.get("action") or ""
        try:
            f = bulk_filter(action, read_filter(q))
        except FilterError as exc:
            return self.dash.page(request, "bulk.html", status=400, error=str(exc),
                                  action=action, fields={}, count="0", described="",
                                  back=self._back(JobFilter()))
        count = await run_in_threadpool(self.app.store.console.count_upto, f, BULK_COUNT_CAP + 1)
        return self.dash.page(request, "bulk.html", action=action, fields=f.query(),
                              count=total_text(count, BULK_COUNT_CAP), described=f.describe(),
                              back=self._back(f))

    async def bulk_run(self, request: Request) -> Response:
        form = request.scope["shiftwork.form"]
        action = str(form.get("action") or "")
        try:
            f = bulk_filter(action, read_filter(form))
        except FilterError as exc:
            return self.dash.page(request, "bulk.html", status=400, error=str(exc),
                                  action=action, fields={}, count="0", described="",
                                  back=self._back(JobFilter()))
        result = await run_in_threadpool(bulk_apply, self.app, action, f, who(request))
        return self.dash.back(request, self._back(f),
                              f"{_BULK_DONE[action]} {result.done:,} of {result.matched:,} "
                              f"jobs matching {f.describe()}")

    @staticmethod
    def _back(f: JobFilter) -> str:
        query = urlencode(f.query())
        return "/jobs" + (f"?{query}" if query else "")


def _after(value: str | None) -> int | None:
    if not value:
        return None
    if not (value.isascii() and value.isdigit() and 0 < int(value) <= MAX_ID):
        raise FilterError(f"after must be a job number (the last one of a page), got {value!r}")
    return int(value)


def _allowed(action: str, f: JobFilter) -> bool:
    try:
        bulk_filter(action, f)
    except FilterError:
        return False
    return True


def _states() -> list[str]:
    return [s.value for s in JobState] + ["waiting"]
