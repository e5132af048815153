"""Serving the dashboard on uvicorn, directly or behind a reverse proxy."""

from __future__ import annotations

from typing import Any

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
                  root_path: str = "", log_level: str = "warning") -> Any:
    """A ``uvicorn.Config`` for the dashboard.

    ``proxy_headers``: trust ``X-Forwarded-Proto`` and ``X-Forwarded-For`` from the
    addresses (or networks) in ``forwarded_allow_ips``, so that the dashboard sees the
    scheme and client address the browser used: the session cookie is then ``Secure``,
    HSTS is sent over https, the Origin check compares against ``https://``, and failed
    logins are counted per real client and against the proxy's own address too. From
    any other address the headers are ignored.

    ``root_path``: the prefix a proxy serves the dashboard under and strips before passing
    the request on ("/ops/jobs"); the dashboard writes its URLs under it.
    """
    import uvicorn
    from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

    if proxy_headers:
        # uvicorn's own proxy-header handling, with the peer noted before it rewrites.
        asgi = KeepPeer(ProxyHeadersMiddleware(asgi, trusted_hosts=forwarded_allow_ips))
    return uvicorn.Config(asgi, host=host, port=port, log_level=log_level.lower(),
                          proxy_headers=False, server_header=False, lifespan="off",
                          root_path="/" + root_path.strip("/") if root_path.strip("/") else "")
