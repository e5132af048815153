"""Database failover under load: the primary dies and its streaming standby is promoted,
while workers run jobs, a sender enqueues and a schedule fires every second.

The primary's WAL senders are stopped for a second (its last commits do not reach the
standby: a synchronous commit waits, an asynchronous one returns), then every process of
the primary is killed at once (harsher than ``pg_ctl stop -m immediate``), 3 s pass with
no primary (leases and the leader's term run out), and the standby is promoted.

Two throwaway clusters of the test's own (tests/faults/pgcluster.py), never the shared
server: a primary and a standby cloned from it by ``pg_basebackup``. The workers (real
processes) and the sender use one multi-host DSN with ``target_session_attrs=read-write``,
so whichever server accepts writes is the one they reach. Afterwards:

- the same worker processes carried on (they found the new primary by themselves), both
  are registered there, and the queue drained;
- every fire instant of the schedule across the switch has exactly one job in the database;
  the leader lease is held on the new primary and the schedule fires there;
- no job claimed before the promote is still ``running`` one lease later;
- with synchronous replication (``synchronous_standby_names = '*'``) no acknowledged
  enqueue and no acknowledged completion is lost, and no occurrence ran under two jobs;
- with asynchronous replication the loss is measured (the figures are printed and kept as
  the test's properties): acknowledged enqueues lost, completions lost and redone,
  duplicate cron runs, time to drain after the promote. docs/deploy.md, "High
  availability", says how it is bounded.

What the workers did is written to files (tests/apps/failover.py), not to the database,
so the record survives whatever the standby lost.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest

from shiftwork import App, StorageError

from .conftest import IN_CI, imported_app, spawn_worker, wait_for
from .faults.pgcluster import ThrowawayCluster
from .test_chaos import stop

pytestmark = [pytest.mark.fault, pytest.mark.postgres]

SCHEMA = "shiftwork"
LEASE = 1.5  # tests/apps/failover.py's lease_seconds (its leader_ttl too)
#: Between the primary's death and the promote (a failover manager takes 10-30 s to
#: decide): longer than a lease, so running jobs' leases and the leader's term run out.
OUTAGE = 3.0
#: How far behind the asynchronous standby is when the primary dies.
LAG = 1.0


class Pair:
    """A primary and its streaming standby, and the multi-host DSN that reaches the
    writable one."""

    def __init__(self, synchronous: bool) -> None:
        # '*': any standby is synchronous. Given on the primary's command line, so the
        # standby (which does not inherit it) does not wait for a standby once promoted.
        options = {"synchronous_standby_names": "'*'", "synchronous_commit": "on"} \
            if synchronous else {}
        self.primary = ThrowawayCluster(options)
        try:
            self.standby = self.primary.standby()
            self.primary.wait_streaming()
        except BaseException:
            self.primary.close()
            raise

    @property
    def dsn(self) -> str:
        return (f"postgresql://postgres@127.0.0.1:{self.primary.port},"
                f"127.0.0.1:{self.standby.port}/postgres"
                "?sslmode=disable&target_session_attrs=read-write&connect_timeout=2")

    def close(self) -> None:
        self.standby.close()
        self.primary.close()


def _pair(synchronous: bool) -> Pair:
    try:
        return Pair(synchronous)
    except (FileNotFoundError, OSError) as exc:
        if IN_CI:
            pytest.fail(f"cannot start throwaway PostgreSQL clusters: {exc}")
        pytest.skip(f"cannot start throwaway PostgreSQL clusters: {exc}")


@pytest.fixture(params=["sync", "async"])
def pair(request: pytest.FixtureRequest) -> Iterator[Pair]:
    p = _pair(synchronous=request.param == "sync")
    yield p
    p.close()


@pytest.fixture
def standby_first() -> Iterator[tuple[Pair, str]]:
    """A migrated pair, and a DSN listing the standby first without asking for the primary
    (libpq's default, target_session_attrs=any: the first server that answers)."""
    p = _pair(synchronous=False)
    primary = App(p.primary.dsn, schema=SCHEMA)
    primary.migrate()
    primary.close()
    yield p, (f"postgresql://postgres@127.0.0.1:{p.standby.port},127.0.0.1:{p.primary.port}"
              "/postgres?sslmode=disable")
    p.close()


def test_a_write_that_reaches_a_standby_says_so(standby_first: tuple[Pair, str]) -> None:
    """A multi-host DSN without target_session_attrs=read-write connects to a standby
    listed first: the write failed with psycopg's own ReadOnlySqlTransaction (no
    StorageError, so a worker did not treat it as an outage, and no hint of the fix), and
    the pool kept the standby's connection for the next statement."""
    pair, dsn = standby_first
    wait_for(lambda: pair.standby.psql(
        f"SELECT count(*) FROM pg_tables WHERE schemaname = '{SCHEMA}'") != "0",
        what="the schema replicated")
    app = App(dsn, schema=SCHEMA)
    job = app.task(queue="q", name="noop")(lambda: None)
    try:
        for _ in range(2):  # each connection that reaches the standby is dropped
            with pytest.raises(StorageError, match="target_session_attrs=read-write") as e:
                job.enqueue()
            assert f"127.0.0.1:{pair.standby.port},127.0.0.1:{pair.primary.port}" in str(e.value)
        with pytest.raises(StorageError, match="target_session_attrs=read-write"):
            asyncio.run(_enqueue_async(app, job))
    finally:
        app.close()


async def _enqueue_async(app: App, job: Any) -> None:
    try:
        await job.enqueue_async()
    finally:
        await app.aclose()


def _rows(dsn: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """A query on whichever server accepts writes (retried while there is none)."""
    for _ in range(100):
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                return conn.execute(sql, params).fetchall()
        except psycopg.OperationalError:
            time.sleep(0.1)
    raise AssertionError(f"could not run {sql!r}")


def _records(folder: Path) -> list[tuple[int, str, str, int, int]]:
    """(pid, phase, label, job id, attempt) of every line the workers wrote."""
    out = []
    for path in folder.glob("*.log"):
        for line in path.read_text().splitlines():
            phase, label, job_id, attempt = line.split()
            out.append((int(path.stem), phase, label, int(job_id), int(attempt)))
    return out


def _epoch(tick_label: str) -> float:
    """The fire instant of ``tick@2026-12-01T22:00:05Z``, in seconds since the epoch."""
    return datetime.fromisoformat(tick_label.removeprefix("tick@")).timestamp()


# Every job the new primary holds, by label (the records' names for them).
_JOBS = f"""
SELECT CASE WHEN task = 'work' THEN 'n-' || (args->'args'->>0)
            ELSE 'tick@' || (meta->>'fire_at') END,
       id, state, attempt, extract(epoch FROM finished_at),
       task <> 'work' OR result = args->'args'->0
FROM "{SCHEMA}".jobs"""


def test_failover_to_a_promoted_standby_under_load(
        pair: Pair, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path, record_property: Any) -> None:
    synchronous = request.node.callspec.params["pair"] == "sync"
    dsn = pair.dsn
    records = tmp_path / "records"
    records.mkdir()
    monkeypatch.setenv("SHIFTWORK_TEST_RECORDS", str(records))
    with imported_app(monkeypatch, "failover", dsn, SCHEMA) as module:
        db = {"dsn": dsn, "schema": SCHEMA}
        logs = [tmp_path / f"worker-{i}.log" for i in range(2)]
        workers = [spawn_worker(db, "failover", ["work=4"], log_path=log,
                                env={"SHIFTWORK_TEST_RECORDS": str(records)}) for log in logs]
        acknowledged: list[str] = []  # labels of the enqueues that returned
        sending = threading.Event()
        sending.set()

        def send() -> None:
            i = 0
            while sending.is_set():
                while sending.is_set():  # an enqueue that raised is retried under its key
                    try:
                        module.work.using(key=f"n-{i}").enqueue(i, 0.01)
                        acknowledged.append(f"n-{i}")
                        break
                    except StorageError:
                        time.sleep(0.05)
                i += 1
                time.sleep(0.005)

        def succeeded() -> int:
            return int(_rows(dsn, f'SELECT count(*) FROM "{SCHEMA}".jobs '
                                  "WHERE state = 'succeeded'")[0][0])

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        try:
            wait_for(lambda: succeeded() >= 100, timeout=60, what="work flowing")
            wait_for(lambda: _rows(dsn, f'SELECT count(*) >= 3 FROM "{SCHEMA}".schedule_runs')
                     [0][0], timeout=30, what="the schedule firing")
            # The primary's last LAG seconds of WAL never reach the standby, and then it
            # dies at once. Synchronous: its commits waited, none was acknowledged.
            with pair.primary.replication_frozen():
                time.sleep(LAG)
                pair.primary.kill()
            time.sleep(OUTAGE)  # no primary: leases and the leader's term run out
            pair.standby.promote()
            promoted = time.monotonic()
            promoted_at = float(_rows(dsn, "SELECT extract(epoch FROM now())")[0][0])
            time.sleep(3.0)  # load on the new primary too
            sending.clear()
            sender.join(30)
            sent = set(acknowledged)

            def drained() -> bool:
                rows = _rows(dsn, _JOBS)
                # (asynchronous: an acknowledged enqueue may be lost, so not waited for)
                return all(row[2] == "succeeded" for row in rows) and (
                    not synchronous or sent <= {row[0] for row in rows})
            try:
                wait_for(drained, timeout=90, interval=0.1, what="the queue drained")
            except AssertionError as exc:
                states = _rows(dsn, f'SELECT task, state, count(*) FROM "{SCHEMA}".jobs '
                                    "GROUP BY 1, 2")
                missing = sorted(sent - {label for label, *_ in _rows(dsn, _JOBS)})[:10]
                raise AssertionError(
                    f"{exc}: {states}; missing {missing}; the workers' logs:\n"
                    + "\n".join(log.read_text()[-3000:] for log in logs)) from None
            drain_seconds = time.monotonic() - promoted
            drained_at = float(_rows(dsn, "SELECT extract(epoch FROM now())")[0][0])
            # The schedule fires on the new primary, under a lease held there.
            wait_for(lambda: _rows(dsn, f'SELECT count(*) >= 3 FROM "{SCHEMA}".schedule_runs '
                                        "WHERE extract(epoch FROM fire_at) > %s",
                                   (promoted_at,))[0][0], timeout=30,
                     what="the schedule firing on the new primary")
            # The leader lease is held on the new primary, by one of the live workers.
            live_ids = {r[0] for r in _rows(dsn, f'SELECT id FROM "{SCHEMA}".workers')}
            leaders = wait_for(lambda: _rows(
                dsn, f'SELECT owner, term FROM "{SCHEMA}".leaders WHERE expires_at > now() '
                     "AND owner = ANY(%s)", (list(live_ids),)), what="a live leader")
            # Each worker's wake-up listener is back, on the new primary.
            wait_for(lambda: _rows(dsn, "SELECT count(*) FROM pg_stat_activity WHERE "
                                        "application_name LIKE 'shiftwork:%%:listen'")[0][0]
                     == len(workers), timeout=30, what="the listeners on the new primary")
            time.sleep(LEASE + 1.0)
            stuck = _rows(dsn, f'SELECT count(*) FROM "{SCHEMA}".jobs WHERE state = '
                               "'running' AND extract(epoch FROM attempted_at) < %s",
                          (promoted_at,))[0][0]
            alive = [w.poll() is None for w in workers]
        finally:
            sending.clear()
            for w in workers:
                stop(w)
    worker_logs = "\n".join(log.read_text()[-3000:] for log in logs)
    assert all(alive), f"workers carried on without a restart; their logs:\n{worker_logs}"
    assert stuck == 0
    assert len(leaders) == 1 and len(live_ids) == 2, (leaders, live_ids)

    jobs = _rows(dsn, _JOBS)
    by_label: dict[str, list[tuple[int, str, int]]] = defaultdict(list)
    for label, job_id, state, attempt, _, _ in jobs:
        by_label[label].append((job_id, state, attempt))
    # Everything succeeded, but the occurrences fired after the queue drained (the
    # schedule went on firing until the workers stopped).
    unfinished = [label for label, _, state, _, _, _ in jobs if state != "succeeded"]
    assert all(label.startswith("tick@") and _epoch(label) > drained_at
               for label in unfinished), unfinished
    # A job holding another run's result: after an asynchronous failover a job id (and
    # its attempt) can be handed out again, and a completion of the lost job, retried
    # across the outage, lands on the new one (the completion is fenced by id and attempt).
    foreign_results = sum(1 for *_, own in jobs if not own)
    seen = _records(records)
    acked: dict[str, set[tuple[int, int]]] = defaultdict(set)  # label -> (job, attempt)
    ran: dict[str, set[int]] = defaultdict(set)  # label -> the job ids it ran under
    labels_of: dict[int, set[str]] = defaultdict(set)  # job id -> labels it ran as
    for _, phase, label, job_id, attempt in seen:
        if phase == "acked":
            acked[label].add((job_id, attempt))
        else:
            ran[label].add(job_id)
            labels_of[job_id].add(label)

    # Exactly one job per fire instant in the database, and no instant skipped.
    ticks = [label for label in by_label if label.startswith("tick@")]
    assert all(len(by_label[t]) == 1 for t in ticks), "an occurrence enqueued twice"
    fired, span = _rows(dsn, f'SELECT count(*), extract(epoch FROM max(fire_at) - '
                             f'min(fire_at)) FROM "{SCHEMA}".schedule_runs')[0]
    assert int(fired) == len(ticks) == int(span) + 1, "a fire instant was skipped"

    lost_enqueues = sent - set(by_label)
    # An acknowledged completion the new primary does not hold: the job is there at
    # another attempt (run again), or not there at all (its enqueue was lost too).
    lost_completions = {label for label, pairs in acked.items()
                        if not any((job_id, attempt) in pairs and state == "succeeded"
                                   for job_id, state, attempt in by_label.get(label, []))}
    redone = {label for label in lost_completions if label in by_label}
    duplicate_ticks = [t for t, ids in ran.items() if t.startswith("tick@") and len(ids) > 1]
    first_after = min((f for *_, f, _ in jobs if f is not None and f > promoted_at),
                      default=None)
    figures = {
        "replication": "sync" if synchronous else "async",
        "acknowledged_enqueues": len(sent),
        "acknowledged_enqueues_lost": len(lost_enqueues),
        "acknowledged_completions": sum(len(p) for p in acked.values()),
        "acknowledged_completions_lost": len(lost_completions),
        "of_which_redone": len(redone),
        "runs": sum(1 for r in seen if r[1] == "start"),
        "job_ids_handed_out_twice": sum(1 for ls in labels_of.values() if len(ls) > 1),
        "jobs_holding_another_runs_result": foreign_results,
        "cron_occurrences": len(ticks),
        "duplicate_cron_runs": len(duplicate_ticks),
        "first_job_done_after_promote_s": None if first_after is None
        else round(float(first_after) - promoted_at, 2),
        "drain_after_promote_s": round(drain_seconds, 2),
        "leader_term_after": leaders[0][1],
    }
    for name, value in figures.items():
        record_property(name, value)
    print(f"\nfailover figures: {figures}")
    if synchronous:
        assert lost_enqueues == set(), "an acknowledged enqueue is lost"
        assert lost_completions == set(), "an acknowledged completion is lost"
        assert duplicate_ticks == [], "an occurrence ran under two jobs"
        assert foreign_results == 0, "a job holds another run's result"
