"""Login, sessions and CSRF for the dashboard.

Two ways in:

- a login token (``shiftwork dashboard``, from ``--token-file`` or
  ``SHIFTWORK_DASHBOARD_TOKEN``): a POST to ``/login`` trades it for a session cookie
  (HttpOnly, SameSite=Strict, Secure over https) naming a server-held session that
  expires and that logout revokes; scripts may send ``Authorization: Bearer <token>``;
- the host application's own auth: ``create_dashboard(app, authenticate=fn)`` where
  ``fn(request) -> bool`` decides every request (e.g. checks your session cookie).

Every POST must carry the form field ``csrf``, an HMAC of the session id, and, when
the browser sends an ``Origin``, come from the dashboard's own origin (the login form
too, checked before a failure is counted: another site cannot lock the operator out).
A browser that logged in gets a device cookie; its later attempts are counted against
it alone, so failures from its address (a shared NAT, a proxy) never lock it out.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable
from typing import Any

from starlette.requests import Request

from shiftwork.web.sessions import Sessions

SESSION_COOKIE = "shiftwork_session"
DEVICE_COOKIE = "shiftwork_device"
#: How long a browser that logged in is known as one (only in this process's life).
DEVICE_MAX_AGE = 30 * 24 * 3600
_PENDING = "shiftwork.pending_session"
Authenticate = Callable[[Request], bool]


def _same(given: str, expected: str) -> bool:
    """Constant-time comparison of any two strings (compare_digest refuses non-ASCII str)."""
    return hmac.compare_digest(given.encode("utf-8", "replace"),
                               expected.encode("utf-8", "replace"))


class Guard:
    def __init__(self, token: str | None, authenticate: Authenticate | None,
                 sessions: Sessions) -> None:
        self.token = token
        self.authenticate = authenticate
        self.sessions = sessions
        # A key per process: cookies and notices signed by an earlier run mean nothing.
        self.key = secrets.token_bytes(32)

    def sign(self, purpose: str, value: str) -> str:
        message = f"{purpose}:{value}".encode("utf-8", "replace")
        return hmac.new(self.key, message, hashlib.sha256).hexdigest()

    def verify(self, purpose: str, value: str, signature: str) -> bool:
        return _same(signature, self.sign(purpose, value))

    # -- sessions ------------------------------------------------------------------

    def new_session(self) -> str:
        """A signed cookie value for a new session (a live one in token mode)."""
        sid = self.sessions.issue() if self.authenticate is None else secrets.token_urlsafe(18)
        return f"{sid}.{self.sign('session', sid)}"

    def session_id(self, request: Request) -> str | None:
        """The id of this request's live session, or None."""
        sid = self._sid(request.cookies.get(SESSION_COOKIE, ""))
        if sid is None:
            return None
        if self.authenticate is None and not self.sessions.is_live(sid):
            return None  # expired or logged out
        return sid

    def _sid(self, cookie: str) -> str | None:
        sid, _, sig = cookie.partition(".")
        if sid and self.verify("session", sid, sig):
            return sid
        return None

    def new_device(self) -> str:
        """A signed cookie value naming a browser that gave the right token."""
        device = secrets.token_urlsafe(18)
        return f"{device}.{self.sign('device', device)}"

    def device_id(self, request: Request) -> str | None:
        """The id of the device cookie this request carries, if it is one of ours."""
        device, _, sig = request.cookies.get(DEVICE_COOKIE, "").partition(".")
        return device if device and self.verify("device", device, sig) else None

    def end_session(self, request: Request) -> None:
        sid = self._sid(request.cookies.get(SESSION_COOKIE, ""))
        if sid is not None:
            self.sessions.revoke(sid)

    def start_session(self, request: Request) -> str:
        """A new signed cookie value whose id this request's pages already use for CSRF."""
        cookie = self.new_session()
        request.scope[_PENDING] = self._sid(cookie)
        return cookie

    def check_token(self, given: str | None) -> bool:
        return self.token is not None and given is not None and _same(given, self.token)

    def bearer(self, request: Request) -> str | None:
        """The Bearer credential this request offers, if any."""
        header = request.headers.get("authorization", "")
        return header[7:].strip() if header.lower().startswith("bearer ") else None

    def is_authenticated(self, request: Request) -> bool:
        if self.authenticate is not None:
            return bool(self.authenticate(request))
        if self.check_token(self.bearer(request)):
            return True
        return self.session_id(request) is not None

    # -- CSRF ------------------------------------------------------------------------

    def csrf_token(self, request: Request) -> str:
        sid = self.session_id(request) or request.scope.get(_PENDING)
        return self.sign("csrf", sid) if sid else ""

    @staticmethod
    def foreign_origin(request: Request) -> str | None:
        """Why a POST from another site is refused, or None (same site, or no Origin)."""
        origin = request.headers.get("origin")
        own = own_origin(request)
        if origin is not None and origin != own:
            return (f"cross-site request refused (Origin {origin!r}; this dashboard is "
                    f"{own!r}: behind a TLS proxy, start it with --proxy-headers)")
        if request.headers.get("sec-fetch-site") == "cross-site":  # a browser's own word
            return "cross-site request refused (Sec-Fetch-Site: cross-site)"
        return None

    def check_post(self, request: Request, form: Any) -> str | None:
        """None when the POST may proceed, else why not."""
        foreign = self.foreign_origin(request)
        if foreign is not None:
            return foreign
        sid = self.session_id(request)
        given = form.get("csrf") if form is not None else None
        if not sid or not isinstance(given, str) or not self.verify("csrf", sid, given):
            return "missing or wrong CSRF token: reload the page and try again"
        return None


def own_origin(request: Request) -> str:
    """This dashboard's origin as the browser sees it: behind a proxy, the scheme is the
    one the proxy reported (``--proxy-headers``), the host the one it passed on."""
    host = request.headers.get("host", "")
    return f"{request.scope.get('scheme', 'http')}://{host}"
