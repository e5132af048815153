"""Long jobs in real worker processes that are killed, stopped and cancelled."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from shiftwork import App, JobContext, JobState

from .conftest import spawn_worker, wait_for

pytestmark = pytest.mark.chaos


class Tables:
    """The test app's tables (tests/apps/longjobs.py), read and written from the test."""

    def __init__(self, db: dict[str, str]) -> None:
        self.sqlite = db["dsn"].startswith("sqlite")
        self.db = db
        self.conn: Any = (sqlite3.connect(db["dsn"].split(":///", 1)[1], timeout=30,
                                          isolation_level=None)
                          if self.sqlite else psycopg.connect(db["dsn"], autocommit=True))

    def t(self, name: str) -> str:
        return name if self.sqlite else f'"{self.db["schema"]}".{name}'

    def run(self, text: str, params: Any = ()) -> list[Any]:
        cur = self.conn.execute(text if self.sqlite else text.replace("?", "%s"), params)
        return [tuple(r) for r in cur.fetchall()] if cur.description else []

    def one(self, text: str, params: Any = ()) -> Any:
        return self.run(text, params)[0][0]

    def create(self, items: int) -> None:
        self.run(f"CREATE TABLE {self.t('lj_items')} (id integer PRIMARY KEY, value integer, "
                 "doubled integer)")
        self.run(f"CREATE TABLE {self.t('lj_log')} (id integer, attempt integer)")
        self.run(f"CREATE TABLE {self.t('lj_charges')} (customer text, period text, "
                 "attempt integer)")
        self.run(f"CREATE TABLE {self.t('lj_marks')} (job_id integer, attempt integer, "
                 "phase text)")
        if self.sqlite:
            with self.conn:  # one transaction, not one commit per row
                self.conn.execute("BEGIN")
                self.conn.executemany(
                    f"INSERT INTO {self.t('lj_items')} (id, value) VALUES (?, ?)",
                    ((i, i % 997) for i in range(1, items + 1)))
        else:
            self.run(f"INSERT INTO {self.t('lj_items')} (id, value) "
                     "SELECT g, mod(g, 997) FROM generate_series(1, ?) g", (items,))

    def marks(self, job_id: int) -> list[tuple[int, str]]:
        return self.run(f"SELECT attempt, phase FROM {self.t('lj_marks')} WHERE job_id = ? "
                        "ORDER BY attempt", (job_id,))

    def write_lock_free(self) -> bool:
        """SQLite: can a writer start now? (False while another process holds the lock.)"""
        probe = sqlite3.connect(self.db["dsn"].split(":///", 1)[1], timeout=0.5,
                                isolation_level=None)
        try:
            probe.execute("BEGIN IMMEDIATE")
            probe.execute("ROLLBACK")
            return True
        except sqlite3.OperationalError:
            return False
        finally:
            probe.close()

    def close(self) -> None:
        self.conn.close()


def freeze(proc: subprocess.Popen[bytes], tables: Tables) -> None:
    """SIGSTOP a worker, but not in the middle of one of its SQLite write transactions:
    a frozen holder of SQLite's only write lock would stop every other process too."""
    for _ in range(100):
        proc.send_signal(signal.SIGSTOP)
        if not tables.sqlite or tables.write_lock_free():
            return
        proc.send_signal(signal.SIGCONT)
    raise AssertionError("could not freeze the worker outside a write transaction")


@pytest.fixture
def tables(app: App, db: dict[str, str]) -> Iterator[Tables]:
    t = Tables(db)
    yield t
    t.close()


@pytest.fixture
def workers() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGCONT)
            p.kill()
        p.wait(10)


def stubs(app: App) -> tuple[Any, Any]:
    """The app's tasks, registered under the worker app's names (the code runs there)."""

    @app.task(name="tests.apps.longjobs.backfill", queue="backfill", max_attempts=20)
    def backfill(ctx: JobContext, total: int, size: int = 1000, pace: float = 0.0,
                 transactional: bool = False) -> int: ...

    @app.task(name="tests.apps.longjobs.charge", queue="billing", max_attempts=10)
    def charge(ctx: JobContext, customer: str, period: str, hold: float = 0.0,
               hold_inside: bool = False) -> Any: ...

    return backfill, charge


def done_so_far(app: App, job_id: int) -> int:
    checkpoint = app.get_job(job_id).checkpoint
    return int(checkpoint["done"]) if checkpoint else 0


def state(app: App, job_id: int) -> JobState:
    return app.get_job(job_id).state


@pytest.mark.parametrize("transactional", [False, True], ids=["plain", "transactional"])
def test_backfill_survives_kill_9(app: App, db: dict[str, str], tables: Tables,
                                  workers: list[subprocess.Popen[bytes]], tmp_path: Path,
                                  transactional: bool) -> None:
    total, size = (100_000, 1000) if not transactional else (20_000, 500)
    tables.create(total)
    backfill, _ = stubs(app)
    job = backfill.enqueue(total=total, size=size, pace=0.02, transactional=transactional)
    log = tmp_path / "workers.log"
    workers.append(spawn_worker(db, "longjobs", ["backfill=1"], log_path=log))
    kills = 0
    for fraction in (0.2, 0.45, 0.7):
        wait_for(lambda f=fraction: done_so_far(app, job.id) >= f * total, timeout=90,
                 what=f"backfill past {fraction:.0%}")
        workers[-1].kill()  # SIGKILL: no hand-back, no goodbye
        workers[-1].wait(10)
        kills += 1
        workers.append(spawn_worker(db, "longjobs", ["backfill=1"], log_path=log))
    wait_for(lambda: state(app, job.id) is JobState.SUCCEEDED, timeout=120,
             what="backfill succeeded")
    final = app.get_job(job.id)
    assert final.result == total
    assert final.attempt == kills + 1
    assert final.progress == {"done": total, "total": total, "message": "doubling values"}
    t = tables.t
    assert tables.one(f"SELECT count(DISTINCT id) FROM {t('lj_log')}") == total
    redone = tables.one(f"SELECT count(*) FROM {t('lj_log')}") - total
    if transactional:
        assert redone == 0  # each batch's writes and its cursor commit together
    else:
        assert 0 <= redone <= kills * size  # at most the batch in flight, per kill
    assert tables.one(f"SELECT count(*) FROM {t('lj_items')} "
                      "WHERE doubled IS NULL OR doubled <> value * 2") == 0
    assert tables.one(f"SELECT sum(doubled) FROM {t('lj_items')}") == \
        2 * sum(i % 997 for i in range(1, total + 1))


# "inside" freezes the worker inside its transaction: only on PostgreSQL, since a frozen
# SQLite writer holds the only write lock and nothing else can rescue until it thaws.
@pytest.mark.parametrize("engine, where", [("sqlite", "before"), ("postgres", "before"),
                                           ("postgres", "inside")], indirect=["engine"])
def test_effect_happens_once_under_forced_rescue(
        app: App, db: dict[str, str], tables: Tables, workers: list[subprocess.Popen[bytes]],
        tmp_path: Path, where: str) -> None:
    """Attempt 1 is frozen (SIGSTOP) past its lease; attempt 2 runs; attempt 1 thaws."""
    tables.create(0)
    _, charge = stubs(app)
    job = charge.enqueue("acme", "2026-10", hold=4.0, hold_inside=where == "inside")
    log = tmp_path / "workers.log"
    first = spawn_worker(db, "longjobs", ["billing=2"], log_path=log)
    workers.append(first)
    wait_for(lambda: (1, "holding") in tables.marks(job.id), timeout=30, what="attempt 1 holding")
    freeze(first, tables)
    workers.append(spawn_worker(db, "longjobs", ["billing=2"], log_path=log))
    if where == "before":
        wait_for(lambda: state(app, job.id) is JobState.SUCCEEDED, timeout=60,
                 what="attempt 2 succeeded")
    else:  # attempt 2 waits on the effect key that frozen attempt 1 holds uncommitted
        wait_for(lambda: app.get_job(job.id).attempt == 2
                 and (2, "started") in tables.marks(job.id), timeout=60, what="attempt 2 started")
    first.send_signal(signal.SIGCONT)
    wait_for(lambda: (1, "lease_lost") in tables.marks(job.id), timeout=60,
             what="attempt 1 rejected")
    wait_for(lambda: state(app, job.id) is JobState.SUCCEEDED, timeout=60, what="job succeeded")
    t = tables.t
    assert tables.run(f"SELECT customer, period, attempt FROM {t('lj_charges')}") == [
        ("acme", "2026-10", 2)]
    assert (1, "committed") not in tables.marks(job.id)
    final = app.get_job(job.id)
    assert final.result == {"charged_by_attempt": 2} and final.attempt == 2
    record = app.store.long_jobs.effect_keys_get("charge:acme:2026-10")
    assert record is not None and record.attempt == 2
    assert record.result == {"charged_by_attempt": 2}


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_cancel_stops_a_running_job_at_its_next_checkpoint(
        app: App, db: dict[str, str], tables: Tables,
        workers: list[subprocess.Popen[bytes]], tmp_path: Path, mode: str) -> None:
    total, size = 5000, 100
    tables.create(total)
    backfill, _ = stubs(app)
    job = backfill.enqueue(total=total, size=size, pace=0.05)
    # A slow heartbeat: the cancellation reaches the task through its checkpoint.
    workers.append(spawn_worker(db, "longjobs", [f"backfill=1:{mode}"], env={
        "SHIFTWORK_TEST_HEARTBEAT": "10"}, log_path=tmp_path / "workers.log"))
    wait_for(lambda: done_so_far(app, job.id) >= 5 * size, timeout=60, what="some batches")
    assert app.cancel_job(job.id).state is JobState.RUNNING
    wait_for(lambda: state(app, job.id) is JobState.CANCELLED, timeout=60, what="cancelled")
    final = app.get_job(job.id)
    assert final.errors[-1]["kind"] == "cancelled"
    assert "stopped at checkpoint" in final.errors[-1]["message"]
    done = final.checkpoint["done"]
    assert 5 * size <= done < total
    # It stopped right at a checkpoint: every processed row is covered by the saved cursor.
    assert tables.one(f"SELECT count(*) FROM {tables.t('lj_log')}") == done


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_pause_and_resume_a_queue_mid_backfill(
        app: App, db: dict[str, str], tables: Tables,
        workers: list[subprocess.Popen[bytes]], tmp_path: Path, mode: str) -> None:
    total, size = 5000, 100
    tables.create(total)
    backfill, _ = stubs(app)
    job = backfill.enqueue(total=total, size=size, pace=0.05)
    workers.append(spawn_worker(db, "longjobs", [f"backfill=2:{mode}"],
                                log_path=tmp_path / "workers.log"))
    wait_for(lambda: done_so_far(app, job.id) >= 5 * size, timeout=60, what="some batches")
    app.pause_queue("backfill")
    wait_for(lambda: state(app, job.id) is JobState.AVAILABLE, timeout=60,
             what="job yielded at a checkpoint")
    paused = app.get_job(job.id)
    assert paused.errors[-1]["kind"] == "paused"
    done = paused.checkpoint["done"]
    assert done < total
    assert tables.one(f"SELECT count(*) FROM {tables.t('lj_log')}") == done
    assert app.store.jobs.claim("backfill", 10, "probe", 30) == []  # nobody can claim it
    assert state(app, job.id) is JobState.AVAILABLE
    app.resume_queue("backfill")
    wait_for(lambda: state(app, job.id) is JobState.SUCCEEDED, timeout=60, what="finished")
    final = app.get_job(job.id)
    assert final.result == total
    assert final.attempt == 2 and final.counted_attempt == 1  # the pause spent no attempt
    assert final.max_attempts == 20
    # Resumed from the checkpoint: no row was processed twice.
    assert tables.one(f"SELECT count(*) FROM {tables.t('lj_log')}") == total
    assert tables.one(f"SELECT count(DISTINCT id) FROM {tables.t('lj_log')}") == total
