"""The dashboard inside a Django project's ASGI application, behind Django's own login.

In the project's ``asgi.py``::

    from django.core.asgi import get_asgi_application
    from shiftwork.contrib.django.asgi import with_dashboard

    application = with_dashboard(get_asgi_application(), prefix="/admin/jobs")

Requests under the prefix go to the dashboard, which lets in the users Django's session
says are logged in and pass ``allow`` (default: active staff); everything else goes to
Django. Log in through Django: a logged-out browser is sent to ``settings.LOGIN_URL``
(or ``login_url=``) with ``?next=`` the page it asked for; the dashboard shows a "Log
out" link only given ``logout_url=`` (a page of yours that logs out).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
ASGI = Callable[[Scope, Any, Any], Awaitable[None]]


def staff(user: Any) -> bool:
    """The default gate: an active staff user (as Django's admin requires)."""
    return bool(user.is_active and user.is_staff)


def django_user(request: Any) -> Any:
    """The Django user a Starlette request's session cookie belongs to (AnonymousUser if
    none): Django's own session store and auth backends decide, as for a Django view."""
    from django.conf import settings
    from django.contrib.auth import get_user
    from django.http import HttpRequest
    from django.utils.module_loading import import_string

    django_request = HttpRequest()
    key = request.cookies.get(settings.SESSION_COOKIE_NAME)
    django_request.session = import_string(settings.SESSION_ENGINE + ".SessionStore")(key)
    return get_user(django_request)


def django_login(allow: Callable[[Any], bool] = staff) -> Callable[[Any], bool]:
    """An ``authenticate`` hook for :func:`shiftwork.web.create_dashboard`: the request's
    Django user, logged in and passing ``allow``."""
    def authenticate(request: Any) -> bool:
        from django.db import close_old_connections

        # As Django does around a request: this runs in a worker thread of the dashboard,
        # whose connection Django's own request cycle would never close.
        close_old_connections()
        try:
            user = django_user(request)
            return bool(user.is_authenticated and allow(user))
        finally:
            close_old_connections()

    return authenticate


def with_dashboard(django_app: ASGI, prefix: str = "/admin/jobs", *,
                   allow: Callable[[Any], bool] = staff, login_url: str | None = None,
                   **dashboard_options: Any) -> ASGI:
    """``django_app`` with the dashboard of the project's App mounted at ``prefix``.

    ``login_url``: where a logged-out browser is sent (a URL or a URL name, as
    ``settings.LOGIN_URL``, the default)."""
    from django.conf import settings
    from django.shortcuts import resolve_url

    from shiftwork.contrib.django import get_app
    from shiftwork.web.dashboard import create_dashboard

    prefix = "/" + prefix.strip("/")
    login = str(login_url or settings.LOGIN_URL)
    if "/" not in login:  # a URL name, as LOGIN_URL may be ("admin:login")
        login = str(resolve_url(login))
    dashboard = create_dashboard(get_app(), authenticate=django_login(allow),
                                 login_url=login, **dashboard_options)

    async def application(scope: Scope, receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and path == prefix:
            await send({"type": "http.response.start", "status": 308,
                        "headers": [(b"location", (prefix + "/").encode())]})
            await send({"type": "http.response.body", "body": b""})
        elif scope["type"] == "http" and path.startswith(prefix + "/"):
            # As a Starlette Mount does: the full path, with the prefix as root_path.
            await dashboard(dict(scope, root_path=scope.get("root_path", "") + prefix),
                            receive, send)
        else:
            await django_app(scope, receive, send)

    return application
