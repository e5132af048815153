"""A throwaway PostgreSQL cluster: initdb in a temporary folder, a free port, its own
server. For tests that stop, restart or kill the server (never the shared one).

``standby()`` clones a running cluster into a streaming standby (``pg_basebackup -R``),
a cluster of its own on another free port; ``promote()`` makes it the primary.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path


def _bindir() -> Path | None:
    found = shutil.which("initdb")
    if found:  # resolved: /usr/local/bin may link initdb alone, not pg_basebackup
        return Path(found).resolve().parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    return versions[-1].parent if versions else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ThrowawayCluster:
    def __init__(self, options: dict[str, str] | None = None,
                 clone_of: ThrowawayCluster | None = None) -> None:
        # Server settings (-c name=value), e.g. max_connections for a fleet. Given on the
        # command line, so a standby cloned from this cluster does not inherit them.
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
        if clone_of is None:
            self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres",
                      "--no-sync", "-E", "UTF8")
        else:
            # A base backup streamed from the running primary; -R writes primary_conninfo
            # and standby.signal, so it starts as a streaming standby.
            self._run("pg_basebackup", "-D", str(self.data), "-h", "127.0.0.1",
                      "-p", str(clone_of.port), "-U", "postgres", "-X", "stream", "-R",
                      "--no-sync", "-c", "fast")
        self.start()

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres?sslmode=disable"

    def _run(self, tool: str, *args: str) -> str:
        done = subprocess.run([*self._as, str(self.bindir / tool), *args], check=True,
                              capture_output=True, timeout=60, text=True)
        return done.stdout

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

    def standby(self, options: dict[str, str] | None = None) -> ThrowawayCluster:
        """A streaming standby of this (running) cluster, started, on a port of its own."""
        return ThrowawayCluster(options, clone_of=self)

    def psql(self, query: str) -> str:
        """One query's result as text (the tests' view of the server, outside any pool)."""
        return self._run("psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                         "-d", "postgres", "-XAtq", "-c", query).strip()

    def wait_streaming(self, timeout: float = 30.0) -> None:
        """Until this primary has a standby streaming from it."""
        deadline = time.monotonic() + timeout
        while self.psql("SELECT count(*) FROM pg_stat_replication "
                        "WHERE state = 'streaming'") == "0":
            if time.monotonic() > deadline:
                raise TimeoutError("no standby is streaming from the primary")
            time.sleep(0.1)

    @contextlib.contextmanager
    def replication_frozen(self) -> Iterator[None]:
        """This primary's WAL senders stopped (SIGSTOP) inside the block: what it commits
        meanwhile does not reach its standby (a synchronous commit waits; an asynchronous
        one returns), a replication lag on demand. Stopping the sender, not the standby's
        receiver: WAL already sent waits in the receiver's socket and arrives anyway."""
        pids = [int(p) for p in self.psql("SELECT pid FROM pg_stat_replication").split()]
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        try:
            yield
        finally:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):  # killed meanwhile
                    os.kill(pid, signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL the server and every process of it at once (a power cut): nothing is
        flushed or sent on the way down, unlike ``stop("immediate")``."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        os.kill(postmaster, signal.SIGSTOP)  # so it restarts no child meanwhile
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError, IndexError, ValueError):
                if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == postmaster:
                    os.kill(int(stat.parent.name), signal.SIGKILL)
        os.kill(postmaster, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while Path(f"/proc/{postmaster}").exists() and time.monotonic() < deadline:
            time.sleep(0.05)  # gone once its parent (pg_ctl's shell, long gone) reaps it

    def promote(self) -> None:
        """Make this standby the primary (pg_ctl promote waits until it accepts writes)."""
        self._run("pg_ctl", "-D", str(self.data), "-w", "promote")

    def close(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)
