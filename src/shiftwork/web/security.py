"""Login, sessions and CSRF for the dashboard.

Two ways in:

- a login token (``shiftwork dashboard --token``): ``/login`` trades it for a signed
  session cookie (HttpOnly, SameSite=Strict); scripts may send it as
  ``Authorization: Bearer <token>`` instead;
- the host application's own auth: ``create_dashboard(app, authenticate=fn)`` where
  ``fn(request) -> bool`` decides every request (e.g. checks your session cookie).

Every POST must carry the form field ``csrf``, an HMAC of the session id, and, when
the browser sends an ``Origin``, come from the dashboard's own origin.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable
from typing import Any

from starlette.requests import Request

SESSION_COOKIE = "shiftwork_session"
_PENDING = "shiftwork.pending_session"
Authenticate = Callable[[Request], bool]


class Guard:
    def __init__(self, token: str | None, authenticate: Authenticate | None) -> None:
        self.token = token
        self.authenticate = authenticate
        if token is not None:  # sessions outlive a restart with the same token
            self.key = hashlib.sha256(b"shiftwork-dashboard\0" + token.encode()).digest()
        else:
            self.key = secrets.token_bytes(32)

    def _sign(self, purpose: str, value: str) -> str:
        return hmac.new(self.key, f"{purpose}:{value}".encode(), hashlib.sha256).hexdigest()

    # -- sessions ------------------------------------------------------------------

    def new_session(self) -> str:
        sid = secrets.token_urlsafe(18)
        return f"{sid}.{self._sign('session', sid)}"

    def session_id(self, request: Request) -> str | None:
        """The session id from the signed cookie, or None."""
        return self._sid(request.cookies.get(SESSION_COOKIE, ""))

    def _sid(self, cookie: str) -> str | None:
        sid, _, sig = cookie.partition(".")
        if sid and hmac.compare_digest(sig, self._sign("session", sid)):
            return sid
        return None

    def start_session(self, request: Request) -> str:
        """A new signed cookie value whose id this request's pages already use for CSRF."""
        cookie = self.new_session()
        request.scope[_PENDING] = self._sid(cookie)
        return cookie

    def check_token(self, given: str | None) -> bool:
        return (self.token is not None and given is not None
                and hmac.compare_digest(given.encode(), self.token.encode()))

    def is_authenticated(self, request: Request) -> bool:
        if self.authenticate is not None:
            return bool(self.authenticate(request))
        header = request.headers.get("authorization", "")
        if header.lower().startswith("bearer ") and self.check_token(header[7:].strip()):
            return True
        return self.session_id(request) is not None

    # -- CSRF ------------------------------------------------------------------------

    def csrf_token(self, request: Request) -> str:
        sid = self.session_id(request) or request.scope.get(_PENDING)
        return self._sign("csrf", sid) if sid else ""

    def check_post(self, request: Request, form: Any) -> str | None:
        """None when the POST may proceed, else why not."""
        origin = request.headers.get("origin")
        if origin is not None and origin != own_origin(request):
            return f"cross-site request refused (Origin {origin!r})"
        sid = self.session_id(request)
        given = form.get("csrf") if form is not None else None
        if not sid or not isinstance(given, str) or not hmac.compare_digest(
                given, self._sign("csrf", sid)):
            return "missing or wrong CSRF token: reload the page and try again"
        return None


def own_origin(request: Request) -> str:
    host = request.headers.get("host", "")
    return f"{request.url.scheme}://{host}"
