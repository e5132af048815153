"""Enqueue inside the caller's transaction, and unique keys under concurrency."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap

import psycopg
import pytest

from shiftwork import App

from .conftest import ROOT


@pytest.mark.parametrize("engine", ["postgres"], indirect=True)
def test_postgres_job_exists_iff_transaction_commits(db: dict[str, str], app: App) -> None:
    @app.task
    def welcome(user_id: int) -> None: ...

    with psycopg.connect(db["dsn"]) as conn:
        conn.execute(f'CREATE TABLE "{db["schema"]}".users (id int primary key)')
        conn.commit()
        # rolled back: neither the user nor the job
        with pytest.raises(RuntimeError), conn.transaction():
            conn.execute(f'INSERT INTO "{db["schema"]}".users VALUES (1)')
            welcome.using(conn=conn).enqueue(1)
            raise RuntimeError("request failed after the enqueue")
        assert app.list_jobs() == []
        # committed: both, exactly once
        with conn.transaction():
            conn.execute(f'INSERT INTO "{db["schema"]}".users VALUES (2)')
            job = welcome.using(conn=conn).enqueue(2)
            # not visible to others before commit
            assert app.list_jobs() == []
        jobs = app.list_jobs()
        assert [(j.id, j.args) for j in jobs] == [(job.id, [2])]
        # bulk inside a transaction
        with conn.transaction():
            app.enqueue_many([welcome.call(i) for i in range(3, 8)], conn=conn)
        assert len(app.list_jobs()) == 6


@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)
def test_sqlite_job_exists_iff_transaction_commits(db: dict[str, str], app: App) -> None:
    @app.task
    def welcome(user_id: int) -> None: ...

    path = db["dsn"].split(":///", 1)[1]
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE users (id int primary key)")
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO users VALUES (1)")
    welcome.using(conn=conn).enqueue(1)
    conn.execute("ROLLBACK")
    assert app.list_jobs() == []
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO users VALUES (2)")
    welcome.using(conn=conn).enqueue(2)
    conn.execute("COMMIT")
    assert [j.args for j in app.list_jobs()] == [[2]]


@pytest.mark.parametrize("mode", [
    "", "unique_for=3600", "unique_states=('scheduled', 'available', 'retrying')",
    "debounce=3600"])
def test_concurrent_unique_enqueues_from_processes(db: dict[str, str], app: App,
                                                   mode: str) -> None:
    """Four processes race on one key, one by one, in bulk and inside their own
    transaction: one job, and every enqueue returned it (each way a key is held)."""
    script = textwrap.dedent(f"""
        import sqlite3, sys
        from shiftwork import App
        dsn = {db['dsn']!r}
        app = App(dsn, schema={db['schema']!r})
        @app.task(name="charge", unique=("customer", "period"), {mode})
        def charge(customer, period, amount): ...
        def in_transaction(i):
            if dsn.startswith("sqlite"):
                conn = sqlite3.connect(dsn.split(":///", 1)[1], isolation_level=None,
                                       timeout=60)
                conn.execute("BEGIN IMMEDIATE")
                job_id = charge.using(conn=conn).enqueue(42, "2026-11", i).id
                conn.execute("COMMIT")
                return job_id
            import psycopg
            with psycopg.connect(dsn) as conn, conn.transaction():
                return charge.using(conn=conn).enqueue(42, "2026-11", i).id
        ids = set()
        for i in range(40):
            ids.add(charge.enqueue(42, "2026-11", i).id)
            ids.update(r.id for r in charge.enqueue_many([(42, "2026-11", i), (42, "2026-11", -i)]))
            if i % 4 == 0:
                ids.add(in_transaction(i))
        print(",".join(map(str, sorted(ids))))
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, cwd=ROOT) for _ in range(4)]
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (_out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err.decode()
    ids = {out.decode().strip() for out, _ in outs}
    jobs = app.list_jobs()
    assert len(jobs) == 1
    assert ids == {str(jobs[0].id)}
