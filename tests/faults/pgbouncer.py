"""A real PgBouncer in transaction mode in front of a PostgreSQL server, on a free port
(Debian's ``pgbouncer`` package; ./dev installs it). Trust auth, as the test server."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg

from .pgcluster import _free_port

BINARY = os.environ.get("SHIFTWORK_TEST_PGBOUNCER", "/usr/sbin/pgbouncer")


class PgBouncer:
    def __init__(self, host: str = "127.0.0.1", port: int = 5432, pool_size: int = 20,
                 max_client_conn: int = 1000) -> None:
        if not os.access(BINARY, os.X_OK):
            raise FileNotFoundError(f"{BINARY} not found (Debian's pgbouncer package)")
        self.port = _free_port()
        self.root = Path(tempfile.mkdtemp(prefix="shiftwork-pgbouncer-"))
        (self.root / "users.txt").write_text('"postgres" ""\n')
        (self.root / "pgbouncer.ini").write_text(f"""\
[databases]
* = host={host} port={port}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {self.port}
unix_socket_dir =
auth_type = trust
admin_users = postgres
auth_file = {self.root / "users.txt"}
pool_mode = transaction
default_pool_size = {pool_size}
max_client_conn = {max_client_conn}
server_reset_query =
ignore_startup_parameters = extra_float_digits,options
logfile = {self.root / "pgbouncer.log"}
pidfile = {self.root / "pgbouncer.pid"}
""")
        # PgBouncer will not run as root: it then runs as the postgres user.
        as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if as_user:
            shutil.chown(self.root, "postgres")
            for f in self.root.iterdir():
                shutil.chown(f, "postgres")
        self.proc = subprocess.Popen([*as_user, BINARY, str(self.root / "pgbouncer.ini")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            with contextlib.suppress(OSError), socket.create_connection(
                    ("127.0.0.1", self.port), timeout=0.5):
                break
            if self.proc.poll() is not None or time.monotonic() > deadline:
                log = self.root / "pgbouncer.log"
                raise RuntimeError("pgbouncer did not start: "
                                   + (log.read_text() if log.exists() else "no log"))
            time.sleep(0.05)

    def dsn(self, dbname: str = "test") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}?sslmode=disable"

    def server_connections(self) -> int:
        """Server connections PgBouncer holds now (SHOW POOLS on its admin console)."""
        with psycopg.connect(self.dsn("pgbouncer"), autocommit=True,
                             prepare_threshold=None) as conn:
            cur = conn.cursor()
            cur.execute("SHOW POOLS")
            names = [d.name for d in cur.description or []]
            return sum(int(r[names.index("sv_active")]) + int(r[names.index("sv_idle")])
                       + int(r[names.index("sv_used")]) for r in cur.fetchall()
                       if r[0] != "pgbouncer")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)
