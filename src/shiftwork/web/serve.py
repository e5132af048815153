"""Serving the dashboard on uvicorn, directly or behind a reverse proxy.

uvicorn has no deadline for reading a request and no bound on open connections: 21,000
half-sent requests made the dashboard time out for everyone, and the accept loop, out of
file descriptors, logged 146 MB in 20 s (issue 26, finding 11). So the dashboard's
connections are guarded here: a request must arrive whole within ``read_timeout``, at most
``max_connections`` are open (past it, the one waiting longest without a request in
progress is closed), and the trouble is logged once per kind every ten seconds. These
bound the harm one client can do; to expose the dashboard, put a reverse proxy in front
(docs/deploy.md).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from shiftwork.observe.lograte import LogLimiter

#: Seconds a client has to send a whole request (headers and body) once it connected or
#: its previous answer was sent. Every dashboard request is a few KB.
READ_TIMEOUT = 10.0
#: Connections open at once, at most (each browser opens a few); see _max_connections.
MAX_CONNECTIONS = 256

log = logging.getLogger("shiftwork.dashboard")
_limited = LogLimiter(log)

# asyncio's own words when accept() fails for want of file descriptors or memory.
_ACCEPT_FAILED = "socket.accept() out of system resource"


#: The scope key holding the address of the connection's other end (the proxy, behind
#: one), kept before uvicorn's proxy headers replace the scope's client.
PEER = "shiftwork.peer"


class KeepPeer:
    """ASGI middleware: note the immediate peer's address in the scope, so that failed
    logins are counted against it too (a trusted peer may claim any client address)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        client = scope.get("client")
        if client:
            scope[PEER] = client[0]
        await self.app(scope, receive, send)


def server_config(asgi: Any, *, host: str = "127.0.0.1", port: int = 8181,
                  proxy_headers: bool = False, forwarded_allow_ips: str = "127.0.0.1",
                  root_path: str = "", log_level: str = "warning",
                  read_timeout: float = READ_TIMEOUT,
                  max_connections: int | None = None) -> Any:
    """A ``uvicorn.Config`` for the dashboard.

    ``proxy_headers``: trust ``X-Forwarded-Proto`` and ``X-Forwarded-For`` from the
    addresses (or networks) in ``forwarded_allow_ips``, so that the dashboard sees the
    scheme and client address the browser used: the session cookie is then ``Secure``,
    HSTS is sent over https, the Origin check compares against ``https://``, and failed
    logins are counted per real client and against the proxy's own address too. From
    any other address the headers are ignored.

    ``root_path``: the prefix a proxy serves the dashboard under and strips before passing
    the request on ("/ops/jobs"); the dashboard writes its URLs under it.

    ``read_timeout``: seconds a client has to send a whole request; ``max_connections``:
    how many may be open at once (default 256, or half the process's open-files limit
    when that is lower).
    """
    import uvicorn
    from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

    from shiftwork.core.errors import ConfigurationError

    if not read_timeout > 0:
        raise ConfigurationError(f"dashboard read_timeout must be > 0 seconds, got "
                                 f"{read_timeout!r}")
    if max_connections is not None and (isinstance(max_connections, bool)
                                        or not isinstance(max_connections, int)
                                        or max_connections < 1):
        raise ConfigurationError(f"dashboard max_connections must be an integer >= 1, got "
                                 f"{max_connections!r}")
    if proxy_headers:
        # uvicorn's own proxy-header handling, with the peer noted before it rewrites.
        asgi = KeepPeer(ProxyHeadersMiddleware(asgi, trusted_hosts=forwarded_allow_ips))
    protocol = guarded_protocol(float(read_timeout), max_connections or _max_connections())
    return uvicorn.Config(asgi, host=host, port=port, log_level=log_level.lower(),
                          proxy_headers=False, server_header=False, lifespan="off",
                          http=protocol, loop=f"{__name__}:dashboard_loop",
                          root_path="/" + root_path.strip("/") if root_path.strip("/") else "")


def _max_connections() -> int:
    """MAX_CONNECTIONS, or half the open-files limit when that is lower: past the limit,
    accept() fails and asyncio retries it in a tight loop."""
    try:
        import resource
    except ImportError:  # not on Windows
        return MAX_CONNECTIONS
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(1, min(MAX_CONNECTIONS, soft // 2))


def dashboard_loop() -> asyncio.AbstractEventLoop:
    """The dashboard's event loop (uvicorn's ``loop=`` factory): a plain asyncio loop
    whose failed accepts are logged once every ten seconds, not once per attempt (it
    retries up to 2,048 times per tick, each with a traceback)."""
    loop = asyncio.new_event_loop()
    loop.set_exception_handler(_on_loop_error)
    return loop


def _on_loop_error(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    if context.get("message") == _ACCEPT_FAILED:
        _limited.log("accept", "dashboard: cannot accept a connection: %s (open-files "
                     "limit reached? lower max_connections or raise ulimit -n)",
                     context.get("exception"))
        return
    loop.default_exception_handler(context)


def guarded_protocol(read_timeout: float, max_connections: int) -> type[Any]:
    """uvicorn's h11 protocol with a deadline for each request's arrival and a bound on
    open connections."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class GuardedH11Protocol(H11Protocol):
        _opened_at = 0.0
        _answered = 0  # answers sent on this connection: which request a deadline is for

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._opened_at = self.loop.time()
            self._expect_request()
            if len(self.connections) > max_connections:
                idle = [c for c in self.connections if isinstance(c, GuardedH11Protocol)
                        and c is not self and c._waiting()]
                victim = min(idle, key=lambda c: c._opened_at) if idle else self
                _limited.log("connections", "dashboard: over %d connections: closed %s "
                             "(slow or idle clients? put a reverse proxy in front)",
                             max_connections, "the longest-waiting one" if idle
                             else "a new one")
                victim.transport.abort()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._answered += 1
            self._expect_request()

        def _waiting(self) -> bool:
            """No request of this connection is with the dashboard: it is only waiting
            for (the rest of) one, or idle between two."""
            return (self.cycle is None or self.cycle.response_complete) \
                and not self.transport.is_closing()

        def _expect_request(self) -> None:
            self.loop.call_later(read_timeout, self._deadline, self._answered)

        def _deadline(self, answered: int) -> None:
            # Still reading the same request (its headers or its body): the client is too
            # slow, or holding the connection open on purpose.
            if answered == self._answered and not self.transport.is_closing() \
                    and self.conn.their_state in (h11.IDLE, h11.SEND_BODY):
                _limited.log("slow", "dashboard: closed a connection that sent no whole "
                             "request within %g s", read_timeout)
                self.transport.abort()

    return GuardedH11Protocol
