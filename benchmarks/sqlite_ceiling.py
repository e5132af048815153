"""How fast SQLite itself inserts jobs, with none of shiftwork's work: the ceiling for
bulk enqueue on SQLite.

    python benchmarks/sqlite_ceiling.py [--n 100000] [--batch 500]

Creates a database with shiftwork's migrations, then inserts ``n`` pre-built rows
(no validation; the batches encoded before timing) in transactions of ``batch`` rows
with the store's own bulk statements, as the store does
(WAL, synchronous=FULL, the store's page cache), once into the real ``jobs`` table and
once into copies of it without the state CHECK, without the claim index, and without
AUTOINCREMENT, to show what each costs. Each table is fresh; each figure is the best of
``--rounds``. Two statements: the row arrays (any mix of jobs), and the one for jobs
that differ only in their arguments (a bulk call of one task: the shared columns bound
once, the arguments one JSON array of strings).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from shiftwork import App
from shiftwork.store.sqlite.store import PAGE_CACHE_KIB

# The store's own bulk statement (one JSON array of rows per batch), with the batches
# encoded before the clock starts: what is timed is SQLite's work alone.
INSERT = ("INSERT INTO {t} (queue, task, args, state, priority, max_attempts, run_at, "
          "created_at, timeout, meta) SELECT " + ", ".join(
              f"json_extract(value, '$[{i}]')" for i in range(10)) +
          " FROM json_each(?) ORDER BY key")
UNIFORM = ("INSERT INTO {t} (queue, task, args, state, priority, max_attempts, run_at, "
           "created_at, timeout, meta) SELECT ?, ?, value, ?, ?, ?, ?, ?, ?, ? "
           "FROM json_each(?) ORDER BY key")


def variant(conn: sqlite3.Connection, name: str, drop: str) -> str:
    """A copy of the jobs table (and its claim index) minus ``drop``."""
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'jobs'").fetchone()[0]
    sql = sql.replace("CREATE TABLE jobs", f"CREATE TABLE {name}")
    if drop == "check":
        start = sql.index("CHECK (state IN")
        sql = sql[:start] + sql[sql.index(")),", start) + 2:]
    if drop == "autoincrement":
        sql = sql.replace("AUTOINCREMENT", "")
    conn.execute(sql)
    if drop != "claim index":
        conn.execute(f"CREATE INDEX {name}_claim ON {name} (queue, priority DESC, run_at, id) "
                     "WHERE state IN ('available', 'scheduled', 'retrying')")
    return name


def rate(conn: sqlite3.Connection, table: str, rows: Sequence[tuple[object, ...]],
         batch: int, uniform: bool = False) -> float:
    if uniform:  # every row alike but for its arguments (column 2)
        shared = rows[0][:2] + rows[0][3:]
        batches = [(*shared, json.dumps([r[2] for r in rows[i:i + batch]]))
                   for i in range(0, len(rows), batch)]
    else:
        batches = [(json.dumps(rows[i:i + batch]),) for i in range(0, len(rows), batch)]
    statement = (UNIFORM if uniform else INSERT).format(t=table)
    started = time.perf_counter()
    for params in batches:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(statement, params)
        conn.execute("COMMIT")
    return len(rows) / (time.perf_counter() - started)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "jobs.db"
        App(f"sqlite:///{path}").migrate()
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute(f"PRAGMA cache_size=-{PAGE_CACHE_KIB}")
        now = time.time()
        rows = [("bench", "bench.noop", '{"args":[],"kwargs":{}}', "available", 0, 1, now, now,
                 None, "{}") for _ in range(a.n)]
        print(f"SQLite {sqlite3.sqlite_version}: {a.n:,} pre-built rows, transactions of "
              f"{a.batch}, best of {a.rounds}")
        tables = [("jobs (as shiftwork has it)", "jobs")]
        for i, drop in enumerate(("check", "claim index", "autoincrement")):
            tables.append((f"jobs without the {drop}", variant(conn, f"jobs_v{i}", drop)))
        for label, table in tables:
            for uniform in (False, True):
                best = 0.0
                for _ in range(a.rounds):
                    conn.execute(f"DELETE FROM {table}")
                    best = max(best, rate(conn, table, rows, a.batch, uniform))
                how = "uniform" if uniform else "row arrays"
                print(f"  {label:<36} {how:<10} {best:>10,.0f} rows/s")


if __name__ == "__main__":
    main()
