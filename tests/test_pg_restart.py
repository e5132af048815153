"""PostgreSQL restarted with ``-m immediate`` (a crash) several times under load.

On a throwaway cluster of its own (tests/faults/pgcluster.py), never the shared server:
two real worker processes run jobs while a sender enqueues, and the server is killed and
started again four times. Afterwards every acknowledged enqueue is there and succeeded,
the same worker processes carried on (they reconnect by themselves), no job claimed
before the last restart is still ``running`` one lease later, and a job that ran twice
did so under two different attempts (fenced).
"""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shiftwork import StorageError

from .conftest import IN_CI, recording_app, spawn_worker, wait_for
from .faults.pgcluster import ThrowawayCluster
from .test_chaos import effects, stop

pytestmark = [pytest.mark.fault, pytest.mark.postgres]

RESTARTS = 4


@pytest.fixture
def cluster() -> Iterator[ThrowawayCluster]:
    try:
        c = ThrowawayCluster()
    except (FileNotFoundError, OSError) as exc:
        if IN_CI:
            pytest.fail(f"cannot start a throwaway PostgreSQL cluster: {exc}")
        pytest.skip(f"cannot start a throwaway PostgreSQL cluster: {exc}")
    yield c
    c.close()


@pytest.fixture
def rec(cluster: ThrowawayCluster, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with recording_app(monkeypatch, cluster.dsn, "shiftwork") as module:
        yield module


def _count(module: Any, sql: str, params: tuple[Any, ...] = ()) -> int:
    for _ in range(50):  # the test's own connection may meet the restart too
        try:
            return int(module._conn().execute(sql, params).fetchone()[0])
        except Exception:
            module._side.forget()
            time.sleep(0.2)
    raise AssertionError(f"could not run {sql!r}")


def test_immediate_restarts_under_load_lose_nothing(rec: Any, cluster: ThrowawayCluster,
                                                    tmp_path: Path) -> None:
    app = rec.app
    db = {"dsn": cluster.dsn, "schema": "shiftwork"}
    logs = [tmp_path / f"worker-{i}.log" for i in range(2)]
    workers = [spawn_worker(db, "recording", ["work=4"], log_path=log) for log in logs]
    acknowledged: list[int] = []
    retried: set[str] = set()  # keys whose first enqueue raised (its commit unknown)
    sending = threading.Event()
    sending.set()

    def send() -> None:
        i = 0
        while sending.is_set():
            while True:  # an enqueue whose reply is lost is retried under its unique key
                try:
                    acknowledged.append(rec.work.using(key=f"n-{i}").enqueue(i, 0.01).id)
                    break
                except StorageError:
                    retried.add(f"n-{i}")
                    time.sleep(0.05)
            i += 1
            time.sleep(0.005)

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    try:
        wait_for(lambda: _count(rec, 'SELECT count(*) FROM "shiftwork".jobs '
                                     "WHERE state = 'succeeded'") >= 50,
                 timeout=60, what="work flowing before the first restart")
        for _ in range(RESTARTS):
            cluster.restart_immediate()
            time.sleep(1.5)
        restarted_at = _count(rec, "SELECT extract(epoch FROM now())::bigint")
        time.sleep(1.0)
        sending.clear()
        sender.join(60)
        # One lease after the last restart, nothing claimed before it is still running.
        time.sleep(app.settings.lease_seconds + 2 * app.settings.rescue_interval + 1)
        stuck = _count(rec, 'SELECT count(*) FROM "shiftwork".jobs WHERE state = \'running\' '
                            "AND extract(epoch FROM attempted_at) < %s", (restarted_at,))
        assert stuck == 0
        wait_for(lambda: _count(rec, 'SELECT count(*) FROM "shiftwork".jobs '
                                     "WHERE state = 'succeeded'") >= len(acknowledged),
                 timeout=120, what="every acknowledged job succeeded")
        assert all(w.poll() is None for w in workers), (
            "workers carried on without a restart; their logs:\n"
            + "\n".join(log.read_text()[-3000:] for log in logs))
    finally:
        sending.clear()
        for w in workers:
            stop(w)
    rows = rec._conn().execute('SELECT id, unique_key, state FROM "shiftwork".jobs').fetchall()
    assert {state for _, _, state in rows} == {"succeeded"}
    assert set(acknowledged) <= {job_id for job_id, _, _ in rows}, "an acknowledged job is lost"
    assert len(set(acknowledged)) == len(acknowledged)
    # A unique key dedupes against active jobs only: when an enqueue's reply was lost and
    # its job finished before the retry, the retry enqueued a second one (documented).
    per_key = Counter(key.rsplit(":", 1)[1] for _, key, _ in rows)  # task:key -> key
    assert all(n == 1 or (n == 2 and key in retried) for key, n in per_key.items()), per_key
    attempts: dict[int, list[int]] = defaultdict(list)
    for job_id, attempt, _pid, phase in effects(rec):
        if phase == "start":
            attempts[job_id].append(attempt)
    assert set(attempts) == {job_id for job_id, _, _ in rows}, "every job ran"
    for job_id, seen in attempts.items():
        assert len(seen) == len(set(seen)), f"job {job_id} ran twice under one attempt: {seen}"
