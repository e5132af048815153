"""Real worker processes through a real PgBouncer in transaction mode: wake-ups on a
direct listener connection, or polling when there is none (docs/deploy.md)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from .conftest import imported_app, spawn_worker, wait_for

pytestmark = pytest.mark.fault  # real worker processes


@pytest.mark.parametrize("engine", ["postgres-pgbouncer"], indirect=True)
@pytest.mark.parametrize("listen", [True, False], ids=["direct-listener", "polling"])
def test_worker_processes_run_jobs_through_pgbouncer(
        db: dict[str, str], listen: bool, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    env = {"SHIFTWORK_TEST_PGBOUNCER": "1", "SHIFTWORK_TEST_POLL": "30" if listen else "0.3",
           "SHIFTWORK_TEST_LISTEN_DSN": db["listen_dsn"] if listen else ""}
    monkeypatch.setenv("SHIFTWORK_TEST_PGBOUNCER", "1")
    monkeypatch.setenv("SHIFTWORK_TEST_LISTEN_DSN", db["listen_dsn"])
    with imported_app(monkeypatch, "fleet", db["dsn"], db["schema"]) as fleet:
        procs = [spawn_worker(db, "fleet", ["fleet=4"], env=env,
                              log_path=tmp_path / f"worker{i}.log") for i in range(2)]
        try:
            wait_for(lambda: len(fleet.app.store.fleet.workers_list()) == 2, timeout=60,
                     what="2 workers registered")
            time.sleep(1.0)  # their first (empty) claims are done
            started = time.monotonic()
            jobs = [fleet.noop.enqueue().id for _ in range(20)]
            jobs += [r.id for r in fleet.noop.enqueue_many([()] * 300)]
            wait_for(lambda: all(s.succeeded == 320 for s in fleet.app.queue_stats()
                                 if s.queue == "fleet"), timeout=60, what="320 jobs done")
            # With a listener, wake-ups arrive (polling is every 30 s here).
            assert time.monotonic() - started < (20 if listen else 60)
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                p.wait(30)
        logs = "".join((tmp_path / f"worker{i}.log").read_text() for i in range(2))
        assert all(p.returncode == 0 for p in procs), logs
        assert "prepared statement" not in logs, logs
