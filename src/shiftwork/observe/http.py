"""A tiny threaded HTTP server for ``/metrics`` (and ``/healthz``) in a worker."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .metrics import Metrics


def serve_metrics(metrics: Metrics, host: str, port: int) -> tuple[ThreadingHTTPServer,
                                                                   threading.Thread]:
    from .metrics import CONTENT_TYPE

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path in ("/metrics", "/"):
                body, status, ctype = metrics.exposition(), 200, CONTENT_TYPE
            elif path == "/healthz":
                body, status, ctype = b"ok\n", 200, "text/plain"
            else:
                body, status, ctype = b"not found: try /metrics\n", 404, "text/plain"
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # scrapes every few seconds would flood the worker's log

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="shiftwork-metrics", daemon=True)
    thread.start()
    return server, thread
