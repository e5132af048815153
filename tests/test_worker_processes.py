"""`shiftwork worker --processes N` (issue 28): a supervisor and N real worker processes
(worker/supervisor.py). They drain a queue; a SIGKILLed one is replaced and its jobs come
back; recycling (after so many jobs, past so much memory, SIGHUP) hands no job back and
spends no attempt; SIGTERM stops them all gracefully and a second one at once; children
that crash at start make the supervisor give up, non-zero; on PostgreSQL the host holds
one listener and about one connection per process."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest

from . import test_fleet_wakeups
from .conftest import PG_DSN, ROOT, imported_app, require_pg, spawn_worker, wait_for
from .test_fleet_wakeups import claims

counted_cluster = test_fleet_wakeups.counted_cluster  # a server counting statements


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


class Host:
    """A supervisor process (``shiftwork worker --processes ...``) and its log."""

    def __init__(self, module: Any, proc: subprocess.Popen[bytes], log: Path) -> None:
        self.module = module
        self.app = module.app
        self.proc = proc
        self.log_path = log

    def children(self) -> set[int]:
        """The pids of the live worker processes (registered, and running)."""
        return {w.pid for w in self.app.store.fleet.workers_list()
                if w.pid != self.proc.pid and alive(w.pid)}

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_children(self, count: int, what: str = "the worker processes") -> set[int]:
        def found() -> set[int] | None:
            children = self.children()
            return children if len(children) == count else None

        return set(wait_for(found, timeout=60, what=f"{what}: {count} registered"))

    def states(self, ids: list[int]) -> list[str]:
        return [self.app.get_job(i).state.value for i in ids]


@contextmanager
def supervised(db: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
               args: list[str], queues: tuple[str, ...] = ("work=2",),
               env: dict[str, str] | None = None) -> Iterator[Host]:
    with imported_app(monkeypatch, "processes", db["dsn"], db["schema"]) as module:
        log = tmp_path / f"supervisor-{len(list(tmp_path.glob('supervisor-*.log')))}.log"
        proc = spawn_worker(db, "processes", list(queues), [*args, "--log-level", "INFO"],
                            env=env, log_path=log)
        host = Host(module, proc, log)
        try:
            yield host
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.send_signal(signal.SIGTERM)  # the second: at once
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(10)


def test_n_processes_drain_a_queue(db: dict[str, str], monkeypatch: pytest.MonkeyPatch,
                                   tmp_path: Path) -> None:
    with supervised(db, monkeypatch, tmp_path, ["--processes", "2"]) as host:
        children = host.wait_children(2)
        ids = [host.module.pid_of.enqueue(0.02).id for _ in range(100)]
        wait_for(lambda: all(s == "succeeded" for s in host.states(ids)), timeout=60,
                 what="the queue drained")
        ran_in = {host.app.get_job(i).result for i in ids}
        assert ran_in == children  # both processes ran jobs, the supervisor none
        assert host.proc.pid not in ran_in


@pytest.mark.chaos
def test_a_sigkilled_child_is_replaced_and_its_jobs_rescued(
        db: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with supervised(db, monkeypatch, tmp_path, ["--processes", "2"]) as host:
        host.wait_children(2)
        ids = [host.module.pid_of.enqueue(1.0).id for _ in range(12)]
        running = wait_for(lambda: [j for j in map(host.app.get_job, ids)
                                    if j.state.value == "running"], what="jobs running")
        victim = next(w.pid for w in host.app.store.fleet.workers_list()
                      if w.id == running[0].worker_id)
        os.kill(victim, signal.SIGKILL)
        # A fresh process takes its slot ...
        wait_for(lambda: len(c := host.children()) == 2 and victim not in c, timeout=60,
                 what="a replacement for the killed process")
        assert host.proc.poll() is None
        # ... and the killed one's jobs come back by the lease rescue and run: none lost.
        wait_for(lambda: all(s == "succeeded" for s in host.states(ids)), timeout=90,
                 what="every job run")
        jobs = list(map(host.app.get_job, ids))
        rescued = [j for j in jobs if any(e["kind"] == "lease_expired" for e in j.errors)]
        assert rescued and all(j.result != victim for j in rescued)
        assert "worker process" in host.log() and "died (signal SIGKILL)" in host.log()


def test_a_child_recycled_after_max_jobs_loses_no_job_and_spends_no_attempt(
        db: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with supervised(db, monkeypatch, tmp_path, ["--max-jobs-per-child", "5"]) as host:
        first = host.wait_children(1)
        ids = [host.module.pid_of.enqueue(0.05).id for _ in range(30)]
        wait_for(lambda: all(s == "succeeded" for s in host.states(ids)), timeout=90,
                 what="the queue drained across recycles")
        jobs = list(map(host.app.get_job, ids))
        # Every job ran once, in one attempt: none handed back, none rescued.
        assert all(j.attempt == 1 and not j.errors for j in jobs), [
            (j.id, j.attempt, j.errors) for j in jobs if j.attempt != 1 or j.errors]
        per_process: dict[int, int] = {}
        for j in jobs:
            per_process[j.result] = per_process.get(j.result, 0) + 1
        assert len(per_process) >= 3 and first <= set(per_process)
        # A child claims no more once it has run 5 and finishes what it holds; only the
        # last one may have run fewer.
        assert len([n for n in per_process.values() if n < 5]) <= 1, per_process
        assert "recycling: ran 5 jobs (--max-jobs-per-child 5)" in host.log()


def test_max_memory_per_child_recycles_a_child_whose_rss_passes_it(
        db: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with supervised(db, monkeypatch, tmp_path, ["--max-memory-per-child", "300MB"],
                    queues=("work=1",)) as host:
        (child,) = host.wait_children(1)
        small = host.module.pid_of.enqueue().id
        wait_for(lambda: host.app.get_job(small).state.value == "succeeded", what="a job")
        assert host.app.get_job(small).result == child  # under the limit: not recycled
        big = host.module.hold_memory.enqueue(400).id
        wait_for(lambda: host.app.get_job(big).state.value == "succeeded", what="the big job")
        assert host.app.get_job(big).result == child
        # It holds 400MB after its job: recycled, a fresh process replaces it.
        wait_for(lambda: len(c := host.children()) == 1 and child not in c, timeout=60,
                 what="the child recycled")
        after = host.module.pid_of.enqueue().id
        wait_for(lambda: host.app.get_job(after).state.value == "succeeded", what="a job")
        assert host.app.get_job(after).result not in (child, host.proc.pid)
        assert host.app.get_job(big).attempt == 1
        assert re.search(r"RSS \d+ MiB passed --max-memory-per-child \(300 MiB\)", host.log())


@pytest.mark.chaos
def test_sigterm_stops_all_gracefully_and_a_second_one_at_once(
        db: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with supervised(db, monkeypatch, tmp_path, ["--processes", "2", "--grace", "120"],
                    queues=("work=1",)) as host:
        children = host.wait_children(2)
        short = [host.module.pid_of.enqueue(2.0).id for _ in range(2)]
        wait_for(lambda: host.states(short) == ["running"] * 2, what="both running")
        host.proc.send_signal(signal.SIGTERM)
        # Graceful: each process finishes its running job, then all exit, status 0.
        assert host.proc.wait(60) == 0
        assert host.states(short) == ["succeeded"] * 2
        assert {host.app.get_job(i).result for i in short} == children
        assert not any(alive(pid) for pid in children)

    with supervised(db, monkeypatch, tmp_path, ["--processes", "2", "--grace", "120"],
                    queues=("work=1",)) as host:
        children = host.wait_children(2)
        long = [host.module.pid_of.enqueue(300.0).id for _ in range(2)]
        wait_for(lambda: host.states(long) == ["running"] * 2, what="both running")
        host.proc.send_signal(signal.SIGTERM)
        wait_for(lambda: "stopping: the worker processes" in host.log(), what="stopping")
        host.proc.send_signal(signal.SIGTERM)
        # At once: not the 120 s grace, not the 300 s jobs; the jobs back, no attempt spent.
        assert host.proc.wait(30) == 0
        for job in map(host.app.get_job, long):
            assert job.state.value == "available" and job.counted_attempt == 0
        assert not any(alive(pid) for pid in children)


@pytest.mark.chaos
def test_sighup_restarts_one_child_at_a_time_and_hands_no_job_back(
        db: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with supervised(db, monkeypatch, tmp_path, ["--processes", "2"],
                    queues=("work=1",)) as host:
        old = host.wait_children(2)
        ids = [host.module.pid_of.enqueue(1.0).id for _ in range(2)]
        wait_for(lambda: host.states(ids) == ["running"] * 2, what="both running")
        more = [host.module.pid_of.enqueue(0.2).id for _ in range(6)]
        host.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: len(c := host.children()) == 2 and not c & old, timeout=90,
                 what="both processes replaced")
        wait_for(lambda: host.log().count(") recycled (") == 2, what="both old ones exited")
        wait_for(lambda: all(s == "succeeded" for s in host.states(ids + more)), timeout=60,
                 what="every job run")
        jobs = list(map(host.app.get_job, ids + more))
        assert all(j.attempt == 1 and not j.errors for j in jobs)  # none handed back
        assert {host.app.get_job(i).result for i in ids} == old  # finished where they ran
        # One at a time: slot 1's turn came after slot 0's old process had exited.
        lines = host.log().splitlines()
        order = [i for i, line in enumerate(lines) if "SIGHUP: restarting worker process"
                 in line or ") recycled (" in line]
        said = [lines[i] for i in order]
        assert len(said) == 4 and "process 0" in said[0] and "process 0" in said[1] \
            and "recycled" in said[1] and "process 1" in said[2], said
        assert host.proc.poll() is None


def test_children_that_crash_at_start_make_the_supervisor_give_up(
        db: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with supervised(db, monkeypatch, tmp_path, ["--processes", "2"],
                    env={"SHIFTWORK_TEST_CHILD_CRASH": "1"}) as host:
        code = host.proc.wait(60)
        log = host.log()
    assert code == 1, log
    assert "failed to start 3 times in a row" in log, log
    assert "this release cannot start" in log  # the child's own reason, named
    assert "giving up" in log


@pytest.mark.parametrize(("value", "said"), [
    ("12", "less than 1MB"), ("lots", "expected a size such as 512MB"),
    ("5TB", "expected a size such as 512MB")])
def test_a_bad_memory_size_is_refused_naming_the_option(value: str, said: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "shiftwork.cli", "worker", "tests.apps.processes:app",
         "--max-memory-per-child", value], cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "SHIFTWORK_TEST_DSN": "sqlite:///unused.db",
             "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}, timeout=60)
    assert out.returncode == 2
    assert "--max-memory-per-child" in out.stderr and said in out.stderr


def connections(pids: set[int]) -> dict[str, int]:
    """The connections the processes hold, by application_name (shiftwork:<pid>[:listen])."""
    names = [f"shiftwork:{pid}{role}" for pid in pids for role in ("", ":listen")]
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        rows = conn.execute("SELECT application_name, count(*) FROM pg_stat_activity "
                            "WHERE application_name = ANY(%s) GROUP BY 1", (names,)).fetchall()
    return {name: int(n) for name, n in rows}


@pytest.mark.fault  # eight real processes and seconds of sampling
def test_an_idle_host_of_eight_processes_holds_one_listener_and_a_connection_each(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    require_pg()
    import uuid

    db = {"dsn": PG_DSN, "schema": f"t_{uuid.uuid4().hex[:12]}"}
    try:
        with supervised(db, monkeypatch, tmp_path, ["--processes", "8"],
                        env={"SHIFTWORK_TEST_POOL_MAX_IDLE": "1.0",
                             "SHIFTWORK_TEST_POLL": "30"}) as host:
            children = host.wait_children(8)
            pids = children | {host.proc.pid}
            wait_for(lambda: sum(connections(pids).values()) <= 9, timeout=30,
                     what="the start-up burst's connections closed")
            # Idle: the listener and one pooled connection per process. Two background
            # ticks of a process that overlap (heartbeat, rescue, lease) open a second
            # pooled one, closed after pool_max_idle (1 s here); on a loaded machine
            # overlaps are frequent enough that all eight can hold two at once. So: at
            # least 2 s of samples, on until the host is seen back at 1 + 8 (a connection
            # a process kept for good would never let it), for at most 20 s.
            samples: list[dict[str, int]] = []
            started = time.monotonic()
            while (time.monotonic() - started < 2.0
                   or (min(sum(s.values()) for s in samples) > 1 + 8
                       and time.monotonic() - started < 20.0)):
                samples.append(connections(pids))
                time.sleep(0.1)
            totals = [sum(s.values()) for s in samples]
            print(f"idle host of 8 processes: connections {sorted(totals)} over "
                  f"{time.monotonic() - started:.1f}s (supervisor + children)")
            assert min(totals) <= 1 + 8, samples
            for sample in samples:
                listeners = {name for name in sample if name.endswith(":listen")}
                assert listeners == {f"shiftwork:{host.proc.pid}:listen"}, sample
                assert sample[f"shiftwork:{host.proc.pid}:listen"] == 1
                assert f"shiftwork:{host.proc.pid}" not in sample  # the supervisor: no pool
            # Relayed wake-ups: polling every 30 s, a job is still picked up at once.
            ids = [host.module.pid_of.enqueue().id for _ in range(8)]
            wait_for(lambda: all(s == "succeeded" for s in host.states(ids)), timeout=10,
                     what="jobs woken through the relay")
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{db["schema"]}" CASCADE')


@pytest.mark.chaos
def test_the_children_of_a_sigkilled_supervisor_stop(
        db: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with supervised(db, monkeypatch, tmp_path, ["--processes", "2"]) as host:
        children = host.wait_children(2)
        host.proc.kill()
        host.proc.wait(10)
        # Their pipe closed: each stops as on SIGTERM (no orphan keeps claiming).
        wait_for(lambda: not any(alive(pid) for pid in children), timeout=30,
                 what="the orphaned children to stop")


def test_a_child_that_is_no_leader_candidate_never_takes_the_lease(make_app: Any) -> None:
    from .conftest import running_worker

    app = make_app()
    elected: list[str] = []
    app.events.subscribe(lambda name, fields: elected.append(name)
                         if name == "leader.elected" else None)
    with running_worker(app, {"work": 1}, leader_candidate=False, listen=False) as worker:
        time.sleep(3 * app.settings.leader_ttl / 3)  # three of a candidate's lease ticks
        assert not any(s.name == "leader" for s in worker.services)
    assert elected == []
    with running_worker(app, {"work": 1}):
        wait_for(lambda: elected == ["leader.elected"], what="a candidate elected")


@pytest.mark.fault  # eight real processes and a server of the test's own
def test_one_enqueue_costs_about_one_claim_through_the_relay(
        counted_cluster: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The wake-up share (worker/wake_share.py) still works when the wake-ups come from
    the supervisor's relay: 8 processes, 12 jobs enqueued one by one."""
    db = {"dsn": counted_cluster.dsn, "schema": "fleet"}
    with supervised(db, monkeypatch, tmp_path, ["--processes", "8"],
                    env={"SHIFTWORK_TEST_POLL": "30"}) as host:
        host.wait_children(8)
        time.sleep(1.5)  # each has run its first claim and heartbeat
        before = claims(db["dsn"])
        for _ in range(12):
            done = host.module.pid_of.enqueue().id
            # Picked up by a relayed wake-up (polling would take 30 s).
            wait_for(lambda done=done: host.app.get_job(done).state.value == "succeeded",
                     timeout=10, what="the job to run")
        per_job = (claims(db["dsn"]) - before) / 12
    assert per_job <= 2.0, f"{per_job:.2f} claims per job with 8 processes"
    print(f"claims per job through the relay, 8 processes: {per_job:.2f}")


@pytest.mark.chaos
def test_a_sigterm_to_every_process_of_the_host_still_stops_gracefully(
        db: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """systemd's KillMode=control-group signals the supervisor and every child at once: the
    children follow the supervisor only, so this is one stop, not a second one."""
    with supervised(db, monkeypatch, tmp_path, ["--processes", "2", "--grace", "120"],
                    queues=("work=1",)) as host:
        children = host.wait_children(2)
        jobs = [host.module.pid_of.enqueue(2.0).id for _ in range(2)]
        wait_for(lambda: host.states(jobs) == ["running"] * 2, what="both running")
        for pid in (*children, host.proc.pid):
            os.kill(pid, signal.SIGTERM)
        assert host.proc.wait(60) == 0
        assert host.states(jobs) == ["succeeded"] * 2  # finished, not handed back
