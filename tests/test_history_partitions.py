"""Partitioned history on PostgreSQL (store/postgres/partitions.py, issue 31): the online
conversion of a populated table, finished jobs in their range's leaves, retention by
dropping leaves (and the rows of other tables with them), the catch-all past the last
range, keyed inserts from a process that connected before, and the claim path's plan."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner

from shiftwork import FakeClock
from shiftwork.cli.root import main
from shiftwork.core.errors import ConfigurationError, StorageError
from shiftwork.core.states import JobState
from shiftwork.store.open import open_store
from shiftwork.store.postgres.partitions import AHEAD, CHILDREN, PostgresPartitions
from shiftwork.store.postgres.store import PostgresStore

from .conftest import PG_DSN
from .store_contract.helpers import claim, done, insert, new_job

DAY = 86400.0


@pytest.fixture
def fresh(pg_schema: str) -> Iterator[tuple[PostgresStore, FakeClock]]:
    """A migrated, not yet partitioned Postgres store on a fake clock."""
    clock = FakeClock(datetime.now(UTC).replace(microsecond=0))
    store = open_store(PG_DSN, schema=pg_schema, clock=clock)
    assert isinstance(store, PostgresStore)
    store.migrate()
    yield store, clock
    store.close()


def parts(store: PostgresStore) -> PostgresPartitions:
    return store.partitions


def where(store: PostgresStore, job_id: int) -> str:
    """The partition (leaf) that holds a job's row."""
    with store._conn() as c:
        row = c.execute(f'SELECT tableoid::regclass::text FROM "{store.schema}".jobs '
                        "WHERE id = %s", (job_id,)).fetchone()
    assert row is not None, f"job {job_id} is gone"
    return str(row[0]).rsplit(".", 1)[-1].strip('"')


def run(store: PostgresStore, n: int, state: JobState = JobState.SUCCEEDED,
        **kwargs: Any) -> list[int]:
    """Insert ``n`` jobs, claim them and finish them in ``state``."""
    ids = insert(store, n, **kwargs)
    claimed = claim(store, limit=n)
    assert sorted(j.id for j in claimed) == sorted(ids)
    assert store.jobs.complete_many([done(j, state) for j in claimed]) == set(ids)
    return ids


def log_line(store: PostgresStore, job_id: int) -> None:
    with store._conn() as c:
        c.execute(f'INSERT INTO "{store.schema}".job_logs (job_id, attempt, seq, at, level, '
                  "logger, message) VALUES (%s, 1, 1, now(), 'info', 'x', 'hello')", (job_id,))


def logs_of(store: PostgresStore, ids: list[int]) -> int:
    with store._conn() as c:
        row = c.execute(f'SELECT count(*) FROM "{store.schema}".job_logs '
                        "WHERE job_id = ANY(%s)", (ids,)).fetchone()
    return int(row[0]) if row else 0


def test_every_foreign_key_to_jobs_is_a_known_child(fresh: tuple[PostgresStore, FakeClock]
                                                    ) -> None:
    """A migration that adds a table pointing at jobs must list it in CHILDREN, or its
    rows would outlive their jobs once the keys are dropped."""
    store, _ = fresh
    with store._conn() as c:
        keys = c.execute(store.q["history_foreign_keys"]).fetchall()
    assert {t.rsplit(".", 1)[-1] for t, _, _ in keys} == set(CHILDREN)
    assert {column for _, _, column in keys} == {"job_id"}


def test_a_users_foreign_key_to_jobs_stops_the_conversion(
        fresh: tuple[PostgresStore, FakeClock]) -> None:
    store, _ = fresh
    with store._conn() as c:
        c.execute(f'CREATE TABLE "{store.schema}".invoices (id int, job_id bigint '
                  f'REFERENCES "{store.schema}".jobs (id))')
    with pytest.raises(ConfigurationError, match=r"invoices \(job_id\)"):
        parts(store).convert(say=lambda _: None)
    assert parts(store).layout() is None


def test_an_unknown_interval_is_refused_before_anything_changes(
        fresh: tuple[PostgresStore, FakeClock]) -> None:
    store, _ = fresh
    with pytest.raises(ConfigurationError, match=r"unknown history interval 'week'.*day, hour"):
        parts(store).convert(interval="week", say=lambda _: None)
    assert parts(store).layout() is None
    runner = CliRunner()
    bad = runner.invoke(main, ["migrate", "--dsn", PG_DSN, "--schema", store.schema,
                               "--partition-history", "--interval", "week"])
    assert bad.exit_code != 0 and "'week' is not one of" in bad.output
    assert parts(store).layout() is None


def test_finished_jobs_go_to_leaves_and_retention_drops_them(
        fresh: tuple[PostgresStore, FakeClock]) -> None:
    store, clock = fresh
    before = run(store, 3)  # finished before the conversion: they stay in jobs_hot
    steps: list[str] = []
    assert parts(store).convert(say=steps.append) is True
    assert parts(store).convert(say=steps.append) is False  # already
    assert any("validating" in s for s in steps) and any("swapping" in s for s in steps)
    assert all(where(store, i) == "jobs_hot" for i in before)
    interval, since = parts(store).layout() or (0, clock.now())
    assert interval == DAY and since > clock.now()
    assert len(parts(store).ranges()) == AHEAD

    clock.set(since + timedelta(hours=1))  # inside the first range
    ok = run(store, 4)
    dead = run(store, 2, JobState.DEAD, max_attempts=1)
    waiting = insert(store, 2, queue="later")
    for i in ok + dead:
        log_line(store, i)
    first = parts(store).ranges()[0].name
    assert {where(store, i) for i in ok} == {f"{first}_done"}
    assert {where(store, i) for i in dead} == {f"{first}_dead"}
    assert {where(store, i) for i in waiting} == {"jobs_hot"}

    # A dead job retried from its leaf moves back to jobs_hot, and runs again.
    store.jobs.retry(dead[0])
    assert where(store, dead[0]) == "jobs_hot"
    [again] = claim(store, limit=5)
    assert again.id == dead[0]
    store.jobs.complete_many([done(again, JobState.DEAD)])
    assert where(store, dead[0]) == f"{first}_dead"

    # The first range's finished leaf goes a day after the range ends; its jobs' logs
    # with it. The dead leaf stays for its own retention, and the horizon moves on.
    clock.set(since + timedelta(days=2, hours=1))
    upkeep = parts(store).maintain(DAY, 14 * DAY)
    assert upkeep.dropped == [f"{first}_done"]
    assert upkeep.forgotten == len(ok)
    assert upkeep.created  # the ranges ahead of the clock
    assert logs_of(store, ok) == 0 and logs_of(store, dead) == len(dead)
    for i in ok:
        with pytest.raises(LookupError):
            store.jobs.get(i)
    assert store.jobs.get(dead[1]).state is JobState.DEAD
    ranges = {r.name: r for r in parts(store).ranges()}
    assert ranges[first].done_bytes is None and ranges[first].dead_bytes is not None
    assert max(r.end for r in ranges.values()) > clock.now() + timedelta(days=AHEAD - 1)

    clock.set(since + timedelta(days=15, hours=1))
    upkeep = parts(store).maintain(DAY, 14 * DAY)
    assert f"{first}_dead" in upkeep.dropped and first in upkeep.dropped
    assert first not in {r.name for r in parts(store).ranges()}
    assert logs_of(store, dead) == 0
    # The jobs finished before the conversion are pruned row by row, as before.
    assert store.jobs.prune(DAY, 14 * DAY) == len(before)
    assert sorted(j.id for j in store.jobs.list(queue="later")) == sorted(waiting)


def test_a_job_finishing_past_the_last_range_waits_in_the_catch_all(
        fresh: tuple[PostgresStore, FakeClock]) -> None:
    store, clock = fresh
    parts(store).convert(say=lambda _: None)
    _, since = parts(store).layout() or (0, clock.now())
    far = since + timedelta(days=30, hours=2)
    clock.set(far)
    [job] = run(store, 1)
    assert where(store, job) == "jobs_h_later"
    upkeep = parts(store).maintain(DAY, 14 * DAY)
    assert upkeep.moved == 1
    assert where(store, job) == "jobs_h" + far.strftime("%Y%m%d") + "00_done"
    assert store.jobs.get(job).state is JobState.SUCCEEDED


def test_the_claim_path_reads_jobs_hot_alone(fresh: tuple[PostgresStore, FakeClock]) -> None:
    """Waiting and running jobs are never looked for in the history's leaves: the plans
    of the claim's, the heartbeat's and the rescue's shapes name jobs_hot only."""
    store, _ = fresh
    parts(store).convert(say=lambda _: None)
    s = f'"{store.schema}"'
    shapes = [
        f"SELECT id FROM {s}.jobs WHERE state IN ('available', 'scheduled', 'retrying') "
        "AND queue = 'q' ORDER BY priority DESC, run_at, id LIMIT 10 FOR UPDATE SKIP LOCKED",
        f"UPDATE {s}.jobs SET lease_expires_at = now() WHERE id = ANY('{{1,2}}') "
        "AND state = 'running'",
        f"SELECT id FROM {s}.jobs WHERE state = 'running' AND lease_expires_at < now()",
    ]
    with store._conn() as c:
        for shape in shapes:
            plan = "\n".join(r[0] for r in c.execute("EXPLAIN " + shape))
            assert "jobs_hot" in plan and "jobs_h2" not in plan and "jobs_h_later" not in plan, plan
            assert "Seq Scan on jobs_h" not in plan.replace("jobs_hot", ""), plan


def test_keyed_inserts_from_a_store_that_connected_before(
        fresh: tuple[PostgresStore, FakeClock]) -> None:
    """A worker started before the conversion: its keyed insert meets a table whose
    unique index is now jobs_hot's, finds the layout, and goes on."""
    store, clock = fresh
    early = open_store(PG_DSN, schema=store.schema, clock=clock)
    assert isinstance(early, PostgresStore)
    try:
        early.ping()
        assert early.partitioned is False
        parts(store).convert(say=lambda _: None)
        [first] = early.jobs.insert([new_job(unique_key="k")])
        [second] = early.jobs.insert([new_job(unique_key="k")])
        assert early.partitioned is True
        assert first.created and not second.created and second.id == first.id
        assert where(store, first.id) == "jobs_hot"
    finally:
        early.close()


def test_a_heartbeat_behind_a_row_that_moved_is_a_transient_error(
        fresh: tuple[PostgresStore, FakeClock]) -> None:
    """A completion moves its row to a leaf; a statement that waited on that row fails
    with 40001 instead of following it: the store reports it as StorageError, which the
    worker's heartbeat and completion paths retry."""
    store, clock = fresh
    parts(store).convert(say=lambda _: None)
    _, since = parts(store).layout() or (0, clock.now())
    clock.set(since + timedelta(hours=1))
    [job_id] = insert(store, 1)
    [job] = claim(store, limit=1)
    outcome: list[BaseException | object] = []
    with psycopg.connect(PG_DSN, autocommit=True) as mover:
        with mover.transaction():
            mover.execute(f'UPDATE "{store.schema}".jobs SET state = \'succeeded\', '
                          "finished_at = %s WHERE id = %s", (clock.now(), job_id))

            def beat() -> None:
                try:
                    outcome.append(store.jobs.heartbeat("w1", 30.0, [(job.id, job.attempt)]))
                except BaseException as exc:
                    outcome.append(exc)

            waiter = threading.Thread(target=beat)
            waiter.start()
            time.sleep(0.5)  # the heartbeat waits on the row lock
            assert not outcome
        waiter.join(10)
    assert len(outcome) == 1 and isinstance(outcome[0], StorageError), outcome
    assert "moved to another partition" in str(outcome[0])


def test_the_conversion_goes_on_while_the_queue_works(pg_schema: str) -> None:
    """Online: with 20,000 finished jobs, the constraint's validation runs while another
    transaction holds a job's row (a completion in flight), and the swap, which needs the
    table's lock, waits for it in short tries, between which enqueues still go in."""
    store = open_store(PG_DSN, schema=pg_schema)
    assert isinstance(store, PostgresStore)
    store.migrate()
    s = f'"{pg_schema}"'
    holder = psycopg.connect(PG_DSN, autocommit=True)
    steps: list[str] = []
    errors: list[BaseException] = []

    def hold(job_id: int) -> None:
        holder.execute("BEGIN")
        holder.execute(f"UPDATE {s}.jobs SET meta = '{{}}' WHERE id = %s", (job_id,))

    try:
        with store._conn() as c:
            c.execute(f"INSERT INTO {s}.jobs (queue, task, args, state, max_attempts, run_at, "
                      "created_at, finished_at) SELECT 'q', 't', '{}', 'succeeded', 1, now(), "
                      "now(), now() - interval '1 hour' FROM generate_series(1, 20000)")
        waiting = insert(store, 50)

        def say(step: str) -> None:
            steps.append(step)
            if step.startswith("validating") or step.startswith("swapping"):
                hold(waiting[0])  # a completion in flight as the step starts
            elif step.startswith("indexing"):
                holder.execute("COMMIT")  # a concurrent index build waits for it

        def convert() -> None:
            try:
                store.partitions.convert(say=say)
            except BaseException as exc:
                errors.append(exc)

        converting = threading.Thread(target=convert)
        converting.start()
        deadline = time.monotonic() + 30
        while not any(m.startswith("swapping") for m in steps) and time.monotonic() < deadline:
            time.sleep(0.05)
        # The validation ran to its end with the row held (the index step came next).
        assert [m.split(" ")[0] for m in steps] == ["adding", "validating", "indexing",
                                                    "swapping"], steps
        time.sleep(0.5)
        other = open_store(PG_DSN, schema=pg_schema)
        try:  # the swap waits for the lock: enqueues go in between its tries
            extra = [r.id for r in other.jobs.insert([new_job() for _ in range(5)])]
        finally:
            other.close()
        assert converting.is_alive()
        holder.execute("COMMIT")
        converting.join(60)
        assert not errors, errors
        assert store.partitions.layout() is not None
        claimed = claim(store, limit=100)
        assert sorted(j.id for j in claimed) == sorted(waiting + extra)
        with store._conn() as c:
            row = c.execute(f"SELECT count(*) FROM {s}.jobs WHERE state = 'succeeded'"
                            ).fetchone()
        assert row is not None and row[0] == 20000
    finally:
        holder.close()
        store.close()


def test_the_migrate_command_partitions_and_sqlite_says_it_cannot(
        pg_schema: str, tmp_path: Any) -> None:
    runner = CliRunner()
    target = ["--dsn", PG_DSN, "--schema", pg_schema]
    first = runner.invoke(main, ["migrate", *target, "--partition-history"])
    assert first.exit_code == 0, first.output
    assert "validating" in first.output and "partitioned:" in first.output
    again = runner.invoke(main, ["migrate", *target, "--partition-history"])
    assert again.exit_code == 0 and "already partitioned" in again.output
    lite = runner.invoke(main, ["migrate", "--dsn", f"sqlite:///{tmp_path / 'j.db'}",
                                "--partition-history"])
    assert lite.exit_code != 0 and "PostgreSQL only" in lite.output


def test_health_reads_jobs_hot_and_sums_up_the_ranges(
        fresh: tuple[PostgresStore, FakeClock]) -> None:
    from shiftwork.observe.table_health import table_json, table_lines

    store, _ = fresh
    assert store.table_health().history_interval is None
    parts(store).convert(interval="hour", say=lambda _: None)
    health = store.table_health()
    assert health.table == "jobs_hot" and health.live_tuples is not None
    assert (health.history_interval, health.history_ranges) == (3600, AHEAD)
    assert health.history_bytes and health.history_bytes > 0
    assert any(line.startswith("history: partitioned by 3600 s, 3 ranges")
               for line in table_lines(health))
    assert table_json(health)["history"]["ranges"] == AHEAD


def test_a_worker_and_an_enqueuer_run_through_the_conversion(pg_schema: str) -> None:
    """A worker draining and another app enqueueing (keyed jobs among them) while the
    worker's own app converts: every job runs once, before, during and after."""
    from .conftest import apps_on, running_worker

    with apps_on(PG_DSN, pg_schema) as make:
        app, producer = make(), make()
        seen: list[int] = []

        def body(i: int) -> None:
            seen.append(i)

        work = app.task(name="work")(body)
        remote = producer.task(name="work")(body)  # the enqueuer's own registration
        sent = [work.enqueue(i).id for i in range(300)]
        stop = threading.Event()

        def produce() -> None:
            i = 300
            while not stop.is_set():
                handle = remote.using(key=f"k{i}").enqueue(i) if i % 2 else remote.enqueue(i)
                sent.append(handle.id)
                i += 1
                time.sleep(0.002)

        with running_worker(app, {"default": 4}):
            feeding = threading.Thread(target=produce)
            feeding.start()
            time.sleep(0.3)
            assert app.store.partitions.convert(say=lambda _: None)
            time.sleep(0.3)
            stop.set()
            feeding.join(10)
            deadline = time.monotonic() + 60
            while len(seen) < len(sent) and time.monotonic() < deadline:
                time.sleep(0.1)
        assert sorted(seen) == list(range(len(sent)))  # each once, none lost
        assert producer.store.partitioned and app.store.partitioned


def test_the_conversion_and_upkeep_through_pgbouncer(pg_schema: str, pgbouncer: Any) -> None:
    """Behind a transaction pooler each statement may reach another server connection:
    the lock timeout is set per transaction (SET LOCAL), so it applies to the DDL it
    guards and leaks to no other client."""
    from shiftwork.store.connections import Connections

    clock = FakeClock(datetime.now(UTC).replace(microsecond=0))
    store = open_store(str(pgbouncer.dsn("test")), schema=pg_schema, clock=clock,
                       connections=Connections(pgbouncer=True, listen_dsn=PG_DSN))
    assert isinstance(store, PostgresStore)
    try:
        store.migrate()
        assert store.partitions.convert(say=lambda _: None)
        _, since = store.partitions.layout() or (0, clock.now())
        clock.set(since + timedelta(hours=1))
        [job] = run(store, 1)
        assert where(store, job).endswith("_done")
        clock.set(since + timedelta(days=2, hours=1))
        assert store.partitions.maintain(DAY, 14 * DAY).dropped
        with store._conn() as c:  # no server connection kept the DDL's lock timeout
            for _ in range(5):
                row = c.execute("SHOW lock_timeout").fetchone()
                assert row is not None and row[0] == "0"
    finally:
        store.close()
