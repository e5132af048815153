"""A TCP proxy between shiftwork and PostgreSQL that injects faults into chosen statements.

It reads the frontend/backend protocol just enough to know which statement a message
belongs to (``Query``, or ``Parse`` then ``Bind`` by statement name, which covers
prepared statements), and then, for the first ``times`` statements whose SQL matches
a pattern:

- ``drop_reply``: let the statement run and its transaction commit, swallow the reply
  and cut the connection (the client cannot know whether it committed). Inside an
  explicit transaction the reply to the ``COMMIT`` is the one swallowed: the proxy waits
  for ``ReadyForQuery`` with status idle, which the server sends only after committing.
- ``cut``: close the connection as the statement is sent, before the server sees it.
- ``delay``: hold the reply for some seconds.

Connect with ``sslmode=disable gssencmode=disable``: the proxy does not speak TLS.
"""

from __future__ import annotations

import contextlib
import re
import socket
import struct
import threading
import time
from dataclasses import dataclass, field

SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104


@dataclass
class Fault:
    kind: str  # "drop_reply" | "cut" | "delay"
    pattern: re.Pattern[str]
    times: int = 1
    seconds: float = 0.0
    fired: int = 0
    fired_sql: list[str] = field(default_factory=list)

    def matches(self, sql: str) -> bool:
        return self.fired < self.times and bool(self.pattern.search(sql))


class _Link:
    """One client connection and its server connection."""

    def __init__(self, proxy: PgFaultProxy, client: socket.socket) -> None:
        self.proxy = proxy
        self.client = client
        self.server = socket.create_connection(proxy.upstream)
        # Messages are relayed one by one: without NODELAY each small write after the
        # first waits for the peer's delayed ACK (~40 ms a round trip, 4 s a migrate).
        for s in (self.client, self.server):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.statements: dict[str, str] = {}
        self.armed: Fault | None = None
        self.lock = threading.Lock()
        self.closed = False

    def close(self) -> None:
        with self.lock:
            if self.closed:
                return
            self.closed = True
        for s in (self.client, self.server):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    # -- client -> server --------------------------------------------------------------

    def client_to_server(self) -> None:
        try:
            length = struct.unpack("!I", _read(self.client, 4))[0]
            body = _read(self.client, length - 4)
            code = struct.unpack("!I", body[:4])[0]
            if code in (SSL_REQUEST, GSSENC_REQUEST):
                raise RuntimeError("connect through the fault proxy with sslmode=disable "
                                   "gssencmode=disable")
            self.server.sendall(struct.pack("!I", length) + body)
            while True:
                kind = _read(self.client, 1)
                length = struct.unpack("!I", _read(self.client, 4))[0]
                body = _read(self.client, length - 4)
                sql = self._sql_of(kind, body)
                if sql is not None:
                    fault = self.proxy.take_fault(sql)
                    if fault is not None and fault.kind == "cut":
                        self.close()
                        return
                    if fault is not None:
                        self.armed = fault
                self.server.sendall(kind + struct.pack("!I", length) + body)
        except (OSError, ConnectionError):
            pass
        finally:
            self.close()

    def _sql_of(self, kind: bytes, body: bytes) -> str | None:
        if kind == b"Q":
            return body.split(b"\0", 1)[0].decode("utf-8", "replace")
        if kind == b"P":
            name, rest = body.split(b"\0", 1)
            self.statements[name.decode()] = rest.split(b"\0", 1)[0].decode("utf-8", "replace")
            return None
        if kind == b"B":
            _portal, rest = body.split(b"\0", 1)
            statement = rest.split(b"\0", 1)[0].decode()
            return self.statements.get(statement)
        return None

    # -- server -> client --------------------------------------------------------------

    def server_to_client(self) -> None:
        held: list[bytes] = []
        try:
            while True:
                kind = _read(self.server, 1)
                length = struct.unpack("!I", _read(self.server, 4))[0]
                body = _read(self.server, length - 4)
                message = kind + struct.pack("!I", length) + body
                fault = self.armed
                if fault is None:
                    self.client.sendall(message)
                    continue
                if fault.kind == "delay":
                    self.armed = None
                    time.sleep(fault.seconds)
                    self.client.sendall(message)
                    continue
                held.append(message)  # drop_reply: hold until the transaction ends
                if kind == b"Z":
                    if body[:1] == b"I":  # idle: committed (or rolled back) on the server
                        self.armed = None
                        self.close()
                        return
                    self.client.sendall(b"".join(held))  # inside a transaction: wait for it
                    held.clear()
        except (OSError, ConnectionError):
            pass
        finally:
            self.close()


class PgFaultProxy:
    """Listens on 127.0.0.1 at a free port and forwards to ``upstream``."""

    def __init__(self, upstream_host: str = "127.0.0.1", upstream_port: int = 5432) -> None:
        self.upstream = (upstream_host, upstream_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._faults: list[Fault] = []
        self._links: list[_Link] = []
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, name="pgproxy-accept", daemon=True).start()

    def dsn(self, user: str = "postgres", dbname: str = "test") -> str:
        return (f"postgresql://{user}@127.0.0.1:{self.port}/{dbname}"
                "?sslmode=disable&gssencmode=disable")

    # -- faults ---------------------------------------------------------------------

    def drop_reply(self, pattern: str, times: int = 1) -> Fault:
        return self._add(Fault("drop_reply", re.compile(pattern), times))

    def cut(self, pattern: str, times: int = 1) -> Fault:
        return self._add(Fault("cut", re.compile(pattern), times))

    def delay(self, pattern: str, seconds: float, times: int = 1) -> Fault:
        return self._add(Fault("delay", re.compile(pattern), times, seconds))

    def _add(self, fault: Fault) -> Fault:
        with self._lock:
            self._faults.append(fault)
        return fault

    def take_fault(self, sql: str) -> Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.matches(sql):
                    fault.fired += 1
                    fault.fired_sql.append(sql)
                    return fault
        return None

    def cut_all(self) -> None:
        """Close every open connection (as a network partition or a server restart would)."""
        with self._lock:
            links = list(self._links)
        for link in links:
            link.close()

    # -- plumbing ---------------------------------------------------------------------

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                link = _Link(self, client)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._links = [lk for lk in self._links if not lk.closed] + [link]
            for target in (link.client_to_server, link.server_to_client):
                threading.Thread(target=target, name="pgproxy-link", daemon=True).start()

    def close(self) -> None:
        self._closed = True
        self._listener.close()
        self.cut_all()


def _read(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(n)
        if not chunk:
            raise ConnectionError("closed")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)
