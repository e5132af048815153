"""A tiny threaded HTTP server for ``/metrics`` (and ``/healthz``) in a worker.

A thread per connection, so both are bounded: at most ``MAX_CONNECTIONS`` at once (more
are closed at once), and each must send its whole request within ``READ_TIMEOUT``. One
slow client used to pin a thread per half-sent request (~600 of them; issue 26, finding
11). Failures are logged once per kind every ten seconds.
"""

from __future__ import annotations

import contextlib
import io
import logging
import socket
import threading

# Real time, not the runtime's clock: socket read deadlines.
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from shiftwork.core.service import ThreadService
from shiftwork.observe.lograte import LogLimiter

if TYPE_CHECKING:
    from shiftwork.observe.metrics import Metrics

#: Connections served at once (a scrape needs one).
MAX_CONNECTIONS = 16
#: Seconds a client has to send its whole request after connecting.
READ_TIMEOUT = 10.0

log = logging.getLogger("shiftwork.metrics")


class _DeadlineReader(io.RawIOBase):
    """Reads from a socket until a deadline, whatever pace the client sends at (a plain
    socket timeout restarts with every byte that arrives)."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock = sock
        self.deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request took too long to arrive")
        self.sock.settimeout(left)
        return self.sock.recv_into(buffer)


class MetricsServer(ThreadingHTTPServer):
    daemon_threads = True
    # Room in the listen queue for a burst while full slots are being freed (with the
    # default 5, connections past it waited a second for the kernel to retry them).
    request_queue_size = 64

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler],
                 max_connections: int = MAX_CONNECTIONS) -> None:
        super().__init__(address, handler)
        self.slots = threading.BoundedSemaphore(max_connections)
        self.max_connections = max_connections
        self.limited = LogLimiter(log)
        self._lock = threading.Lock()
        self._reading: dict[Any, float] = {}  # connections still sending their request
        self._evicted: set[Any] = set()
        # Every answer is made on this one thread: the SQLite store keeps a connection per
        # thread, and a thread per request used to leave one open per scrape (2 files each).
        self.render = ThreadPoolExecutor(max_workers=1, thread_name_prefix="shiftwork-metrics")

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            # Full: the connection that has been sending its request the longest makes
            # room (its thread wakes up and ends), so slow clients cannot starve a scrape.
            evicted = self._evict_slowest()
            if not evicted or not self.slots.acquire(timeout=1.0):
                self.limited.log("connections", "metrics port: %d connections open already: "
                                 "closed a new one from %s", self.max_connections,
                                 client_address[0])
                self.shutdown_request(request)
                return
            self.limited.log("evicted", "metrics port: %d connections open already: closed "
                             "the one slowest to send its request", self.max_connections)
        with self._lock:
            self._reading[request] = time.monotonic()
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.request_read(request)
            self.slots.release()  # no thread started to release it
            raise

    def _evict_slowest(self) -> bool:
        with self._lock:
            if not self._reading:
                return False
            slowest = min(self._reading, key=self._reading.__getitem__)
            del self._reading[slowest]
            self._evicted.add(slowest)
        with contextlib.suppress(OSError):  # gone already
            slowest.shutdown(socket.SHUT_RDWR)
        return True

    def request_read(self, request: Any) -> bool:
        """The request has arrived whole (or its connection ended): no longer evictable.
        False when it was evicted (what it read then is cut short: not to be answered)."""
        with self._lock:
            self._reading.pop(request, None)
            return request not in self._evicted

    def server_close(self) -> None:
        super().server_close()
        self.render.shutdown(wait=False)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.request_read(request)
            with self._lock:
                self._evicted.discard(request)
            self.slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that went away mid-answer: not worth a traceback on the worker's stderr.
        import sys

        self.limited.log("error", "metrics port: a request from %s failed: %s",
                         client_address[0], sys.exc_info()[1])


class Serving(ThreadService):
    """Answers an HTTP server's requests on its own thread; stopped, closes the server."""

    name = "metrics"

    def __init__(self, server: ThreadingHTTPServer | None = None) -> None:
        super().__init__()
        self.server = server

    def run(self) -> None:
        assert self.server is not None
        self.server.serve_forever()

    def interrupt(self) -> None:
        # shutdown() waits for serve_forever(): only when a thread was made to run it
        # (start makes none once stopping is set, so none can appear after this check).
        if self._thread is not None and self.server is not None:
            self.server.shutdown()

    def stop(self, timeout: float = 5.0) -> None:
        super().stop(timeout)
        server, self.server = self.server, None
        if server is not None:
            server.server_close()


def serve_metrics(metrics: Metrics, host: str, port: int,
                  read_timeout: float = READ_TIMEOUT,
                  max_connections: int = MAX_CONNECTIONS) -> tuple[ThreadingHTTPServer, Serving]:
    """``/metrics`` served on ``host:port`` (0: any free port), on a started thread."""
    server = metrics_server(metrics, host, port, read_timeout, max_connections)
    serving = Serving(server)
    serving.start()
    return server, serving


def metrics_server(metrics: Metrics, host: str, port: int,
                   read_timeout: float = READ_TIMEOUT,
                   max_connections: int = MAX_CONNECTIONS) -> ThreadingHTTPServer:
    """The ``/metrics`` server bound to ``host:port``, not yet serving."""
    from shiftwork.observe.metrics import CONTENT_TYPE

    class Handler(BaseHTTPRequestHandler):
        def setup(self) -> None:
            super().setup()
            self.rfile.close()  # the socket's own file: it would keep the socket open
            self.connection.settimeout(read_timeout)  # also bounds writing the answer
            self.rfile = io.BufferedReader(
                _DeadlineReader(self.connection, time.monotonic() + read_timeout))

        def parse_request(self) -> bool:
            parsed = super().parse_request()
            assert isinstance(self.server, MetricsServer)
            if not self.server.request_read(self.request):
                self.close_connection = True
                return False
            return parsed

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path in ("/metrics", "/"):
                assert isinstance(self.server, MetricsServer)
                body = self.server.render.submit(metrics.exposition).result()
                status, ctype = 200, CONTENT_TYPE
            elif path == "/healthz":
                body, status, ctype = b"ok\n", 200, "text/plain"
            else:
                body, status, ctype = b"not found: try /metrics\n", 404, "text/plain"
            self.connection.settimeout(read_timeout)
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # scrapes every few seconds would flood the worker's log

    return MetricsServer((host, port), Handler, max_connections)
