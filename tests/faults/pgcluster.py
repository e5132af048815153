"""A throwaway PostgreSQL cluster: initdb in a temporary folder, a free port, its own
server. For tests that stop, restart or kill the server (never the shared one)."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


def _bindir() -> Path | None:
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    return versions[-1].parent if versions else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ThrowawayCluster:
    def __init__(self, options: dict[str, str] | None = None) -> None:
        # Server settings (-c name=value), e.g. max_connections for a fleet.
        self.options = dict(options or {})
        bindir = _bindir()
        if bindir is None:
            raise FileNotFoundError("initdb not found (PostgreSQL's server binaries)")
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="shiftwork-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        # initdb refuses to run as root: the cluster then belongs to the postgres user.
        self._as = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self._as:
            shutil.chown(self.root, "postgres")
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres",
                  "--no-sync", "-E", "UTF8")
        self.start()

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres?sslmode=disable"

    def _run(self, tool: str, *args: str) -> None:
        subprocess.run([*self._as, str(self.bindir / tool), *args], check=True,
                       capture_output=True, timeout=60)

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-w",
                  "-o", f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1"
                  + "".join(f" -c {k}={v}" for k, v in self.options.items()), "start")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def restart_immediate(self) -> None:
        """Kill the server without a clean shutdown (crash recovery on start), then start."""
        self.stop("immediate")
        self.start()

    def close(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)
