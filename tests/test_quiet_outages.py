"""A database outage in a worker's log (issue 28): one warning when the database is lost,
at most one line per ``Settings.outage_log_every`` while it stays down, no tracebacks,
and one line when it is back with the outage's length. On a throwaway cluster of its own
(tests/faults/pgcluster.py), stopped for a few seconds under a real worker process."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shiftwork import StorageError

from .conftest import recording_app, spawn_worker, wait_for
from .faults.pgcluster import ThrowawayCluster
from .test_chaos import effects, stop
from .test_pg_restart import cluster  # noqa: F401  (the fixture)

pytestmark = [pytest.mark.fault, pytest.mark.postgres]

EVERY = 2.0  # Settings.outage_log_every in the worker, so a short outage needs a reminder
OUTAGE = 7.0


def _reaches(app: Any) -> bool:
    try:
        app.store.ping()  # a broken pooled connection is discarded on the way
        return True
    except StorageError:
        return False


@pytest.fixture
def rec(cluster: ThrowawayCluster, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:  # noqa: F811
    with recording_app(monkeypatch, cluster.dsn, "shiftwork") as module:
        yield module


def test_an_outage_is_three_kinds_of_line_and_no_traceback(
        rec: Any, cluster: ThrowawayCluster, tmp_path: Path) -> None:  # noqa: F811
    db = {"dsn": cluster.dsn, "schema": "shiftwork"}
    log = tmp_path / "worker.log"
    worker = spawn_worker(db, "recording", ["work=4"], log_path=log,
                          env={"SHIFTWORK_TEST_OUTAGE_LOG_EVERY": str(EVERY)})
    try:
        first = rec.work.enqueue_many([(i,) for i in range(10)])
        wait_for(lambda: len(effects(rec)) == 10, what="the first jobs run")
        before = log.read_text()
        cluster.stop("fast")
        time.sleep(OUTAGE)  # the outage itself: nothing to wait on but time
        cluster.start()
        wait_for(lambda: "database back after" in log.read_text(), timeout=60,
                 what="the worker says the database is back")
        rec._side.forget()
        wait_for(lambda: _reaches(rec.app), what="the test's own pool reconnected")
        second = rec.work.enqueue_many([(i,) for i in range(10, 20)])
        wait_for(lambda: len(effects(rec)) == 20, timeout=60, what="work flows again")
    finally:
        stop(worker)
    during = log.read_text()[len(before):]
    lines = [line for line in during.splitlines() if line.strip()]
    print(f"{len(lines)} log lines for a {OUTAGE:.0f}s outage:", *lines, sep="\n  ")
    assert "Traceback" not in during
    lost = [line for line in lines if "database unreachable" in line]
    still = [line for line in lines if "database still unreachable" in line]
    back = [line for line in lines if "database back after" in line]
    assert len(lost) == 1 and len(back) == 1
    assert 1 <= len(still) <= OUTAGE / EVERY + 2  # a reminder per EVERY seconds at most
    took = float(re.search(r"database back after ([0-9.]+)s", back[0]).group(1))  # type: ignore[union-attr]
    assert took >= OUTAGE - 1
    # What else may be said: the jobs' own failures (these tasks write to the database
    # too), and psycopg's first word of the lost connection, before the worker's own.
    others = [line for line in lines if line not in lost + still + back
              and "job.failed" not in line and "job.retried" not in line]
    assert len(others) <= 3, others
    assert all(rec.app.get_job(r.id).state.value == "succeeded" for r in first + second)
