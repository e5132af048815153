"""Serving the dashboard on uvicorn, directly or behind a reverse proxy."""

from __future__ import annotations

from typing import Any


def server_config(asgi: Any, *, host: str = "127.0.0.1", port: int = 8181,
                  proxy_headers: bool = False, forwarded_allow_ips: str = "127.0.0.1",
                  root_path: str = "", log_level: str = "warning") -> Any:
    """A ``uvicorn.Config`` for the dashboard.

    ``proxy_headers``: trust ``X-Forwarded-Proto`` and ``X-Forwarded-For`` from the
    addresses (or networks) in ``forwarded_allow_ips``, so that the dashboard sees the
    scheme and client address the browser used: the session cookie is then ``Secure``,
    HSTS is sent over https, the Origin check compares against ``https://``, and failed
    logins are counted per real client. From any other address the headers are ignored.

    ``root_path``: the prefix a proxy serves the dashboard under and strips before passing
    the request on ("/ops/jobs"); the dashboard writes its URLs under it.
    """
    import uvicorn

    return uvicorn.Config(asgi, host=host, port=port, log_level=log_level.lower(),
                          proxy_headers=proxy_headers,
                          forwarded_allow_ips=forwarded_allow_ips if proxy_headers else "",
                          server_header=False, lifespan="off",
                          root_path="/" + root_path.strip("/") if root_path.strip("/") else "")
