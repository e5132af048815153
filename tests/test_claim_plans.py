"""The prepared claim keeps a good plan when statistics are stale (Postgres).

The claim is prepared, so after a few runs Postgres may switch to a generic plan,
built without the parameter values. Right after a bulk load, with no statistics yet,
a generic plan that bitmap-scans and sorts every waiting job was seen to take
0.6-1.3 s per claim at 1,000,000 waiting jobs instead of ~1 ms. This pins the plan's
shape, not its time: walk the claim index in order, no sort. At 600,000 unanalyzed
rows the earlier statement (with filters on task) already planned the sort; this one
must not.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from shiftwork import App

from .conftest import PG_DSN, require_pg


def _plan_nodes(plan: dict[str, Any]) -> list[tuple[str, str]]:
    out = [(plan["Node Type"], plan.get("Index Name", "") or plan.get("Relation Name", ""))]
    for child in plan.get("Plans", []):
        out += _plan_nodes(child)
    return out


# The prepared claims, with their own parameters: the plain one, and the ones for a queue
# whose only limits are task rate limits (a bucket per task, made below) or its own rate
# (the plain one and the last two are functions run under their generic plan).
_CLAIMS: dict[str, dict[str, Any]] = {
    "jobs_claim": {},
    "jobs_claim_task_rates": {"tasks": ["noop", "other"], "capacities": [1e9, 1e9],
                              "rates": [1e9, 1e9]},
    "jobs_claim_task_rates/one": {"tasks": ["noop"], "capacities": [1e9], "rates": [1e9]},
    "jobs_claim_queue_rate": {"key": "queue:bench", "capacity": 1e9, "rate": 1e9},
}
_FAIR: dict[str, dict[str, Any]] = {"jobs_claim_fair": {}}


# Every claim is a function (store/postgres/migrations/functions.sql): its plans are those
# of the statement inside, which runs under its generic plan.
_FUNCTIONS = {"jobs_claim": "claim_jobs", "jobs_claim_queue_rate": "claim_jobs_queue_rate",
              "jobs_claim_task_rates": "claim_jobs_task_rates",
              "jobs_claim_fair": "claim_jobs_fair"}


def _sorts(case: str) -> bool:
    """Whether the claim sorts the few jobs it picked (its tasks' and the rest) once."""
    return case.startswith("jobs_claim_task_rates")


def _statement(app: App, conn: psycopg.Connection[Any], name: str) -> str:
    """The store's statement ``name``; for a claim that is a function, the statement it
    runs, as stored in the database, its p_x arguments written %(x)s."""
    function = _FUNCTIONS[name.split("/")[0]]
    row = conn.execute("SELECT p.prosrc, p.proconfig FROM pg_proc p JOIN pg_namespace n "
                       "ON n.oid = p.pronamespace WHERE n.nspname = %s "
                       "AND p.proname = %s", (app.schema, function)).fetchone()
    assert row is not None, "the claim's function is missing"
    for setting in row[1] or []:  # planned as the function plans it (enable_seqscan=off...)
        key, _, value = setting.partition("=")
        if key != "plan_cache_mode":  # (the test chooses generic or custom itself)
            conn.execute(f"SET {key} = {value}")
    body = row[0].split("RETURN QUERY", 1)[1].rsplit(";", 1)[0]
    return re.sub(r"\bp_(\w+)", r"%(\1)s", body)


def _explain_prepared(app: App, conn: psycopg.Connection[Any], name: str, mode: str,
                      ) -> list[tuple[str, str]]:
    """The plan of the store's statement ``name`` as a server-side prepared statement (its
    %(name)s placeholders become $n), planned generically or for its values."""
    text = _statement(app, conn, name)
    names: list[str] = []

    def number(m: re.Match[str]) -> str:
        if m.group(1) not in names:
            names.append(m.group(1))
        return f"${names.index(m.group(1)) + 1}"

    conn.execute(f"SET plan_cache_mode = force_{mode}_plan")
    conn.execute("PREPARE claim AS " + re.sub(r"%\((\w+)\)s", number, text))
    values = {"queue": "bench", "limit": 50, "worker": "w", "lease": 10.0, "now": None,
              **{**_CLAIMS, **_FAIR}[name]}
    args = ", ".join("NULL::timestamptz" if n == "now" else
                     psycopg.sql.Literal(values[n]).as_string(conn) for n in names)
    conn.execute("BEGIN")
    (plan,) = conn.execute(f"EXPLAIN (FORMAT JSON) EXECUTE claim({args})").fetchone()
    conn.execute("ROLLBACK")
    conn.execute("DEALLOCATE claim")
    conn.execute("RESET ALL")
    return _plan_nodes((plan if isinstance(plan, list) else json.loads(plan))[0]["Plan"])


def _buckets(conn: psycopg.Connection[Any], schema: str) -> None:
    conn.execute(f'''INSERT INTO "{schema}".rate_buckets (key, tokens, updated_at)
                     VALUES ('task:noop', 1e9, now()), ('task:other', 1e9, now()),
                            ('queue:bench', 1e9, now())''')


@pytest.fixture(scope="module")
def stale() -> Iterator[App]:
    """An app whose jobs table got 600,000 rows after its (empty) statistics, and no
    ANALYZE since: one for the module, as the tests below only plan (nothing runs), and
    the load took ~4 s a test."""
    require_pg()
    schema = f"t_{uuid.uuid4().hex[:12]}"
    app = App(PG_DSN, schema=schema)
    try:
        app.migrate()
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(f'ALTER TABLE "{schema}".jobs SET (autovacuum_enabled = false)')
            conn.execute(f'''
                INSERT INTO "{schema}".jobs (queue, task, args, state, max_attempts, run_at,
                                             created_at)
                SELECT 'bench', 'noop', '{{"args": []}}', 'available', 1, now(), now()
                FROM generate_series(1, 600000)''')
            _buckets(conn, schema)
        yield app
    finally:
        app.close()
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.mark.parametrize("name", sorted(_CLAIMS))
@pytest.mark.parametrize("mode", ["generic", "custom"])
def test_generic_claim_plan_walks_the_index_with_stale_statistics(
        stale: App, name: str, mode: str) -> None:
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        # Planned generically, and planned for its values: both must walk the index.
        nodes = _explain_prepared(stale, conn, name, mode)
    kinds = [kind for kind, _ in nodes]
    assert kinds.count("Sort") == _sorts(name), nodes
    assert not {"Seq Scan", "Bitmap Heap Scan"} & set(kinds), nodes
    assert ("Index Scan", "jobs_claim_idx") in nodes, nodes


@pytest.mark.parametrize("engine", ["postgres"], indirect=True)
@pytest.mark.parametrize("name", sorted(_CLAIMS))
def test_claims_generic_plan_finds_jobs_by_id_after_analyze(
        app: App, db: dict[str, str], name: str) -> None:
    """The plain claim and the rate-limited ones (functions) always run under their generic
    plan, which guesses a tenth of the backlog for their LIMITs: with fresh statistics it
    must still walk the claim index and update the jobs found by id, not hash them against
    a scan of the whole table."""
    schema = db["schema"]
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'''
            INSERT INTO "{schema}".jobs (queue, task, args, state, max_attempts, run_at,
                                         created_at)
            SELECT 'bench', CASE WHEN i % 2 = 0 THEN 'noop' ELSE 'more' END, '{{"args": []}}',
                   'available', 1, now(), now()
            FROM generate_series(1, 100000) i''')
        conn.execute(f'ANALYZE "{schema}".jobs')
        _buckets(conn, schema)
        nodes = _explain_prepared(app, conn, name, "generic")
    kinds = [kind for kind, _ in nodes]
    assert "Hash Join" not in kinds, nodes
    assert ("Index Scan", "jobs_claim_idx") in nodes, nodes
    assert ("Index Scan", "jobs_pkey") in nodes, nodes


@pytest.mark.parametrize("engine", ["postgres"], indirect=True)
# (the fair claim has its own empty-table case below: it walks the group index, and sorts
# its few candidates by design)
@pytest.mark.parametrize("name", sorted(_CLAIMS))
def test_a_claims_generic_plan_made_on_an_empty_table_still_walks_the_index(
        app: App, db: dict[str, str], name: str) -> None:
    """A generic plan is kept until the statistics change: one made before the first
    enqueue (a worker started on an empty queue) must not be a scan and sort of the whole
    table, which every claim of the flood that follows would then run."""
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        _buckets(conn, db["schema"])
        nodes = _explain_prepared(app, conn, name, "generic")
    kinds = [kind for kind, _ in nodes]
    assert not {"Seq Scan", "Bitmap Heap Scan"} & set(kinds), nodes
    assert kinds.count("Sort") == _sorts(name), nodes
    assert ("Index Scan", "jobs_claim_idx") in nodes, nodes


# The statements that find a worker's running jobs by (id, attempt) pairs, with their
# parameters: 50 of the 100 running jobs.
_BY_ID = {
    "jobs_complete_many": lambda ids: {
        "ids": ids, "attempts": [1] * len(ids), "states": ["succeeded"] * len(ids),
        "run_ats": [None] * len(ids), "errors": [None] * len(ids),
        "results": [None] * len(ids), "peaks": [None] * len(ids), "items": [None] * len(ids),
        "channel": "c",
        "done_channel": "d"},
    "jobs_heartbeat": lambda ids: {"worker": "w", "ids": ids, "attempts": [1] * len(ids),
                                   "lease": 10.0},
    "jobs_hand_back": lambda ids: {"worker": "w", "ids": ids, "attempts": [1] * len(ids),
                                   "kind": "handed_back", "type": "Shutdown", "message": "m"},
}


@pytest.mark.parametrize("engine", ["postgres"], indirect=True)
@pytest.mark.parametrize("name", sorted(_BY_ID))
def test_running_jobs_are_found_by_primary_key_after_analyze(
        app: App, db: dict[str, str], name: str) -> None:
    """After a bulk load and ANALYZE the statistics say few jobs run, and a plain
    `state = 'running'` made the planner scan the partial index on running jobs (dead
    entries piling up while a queue drains) instead of the ids: a drain ran ~16x slower.
    """
    schema = db["schema"]
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'''
            INSERT INTO "{schema}".jobs (queue, task, args, state, max_attempts, run_at,
                                         created_at)
            SELECT 'bench', 'noop', '{{"args": []}}', 'available', 1, now(), now()
            FROM generate_series(1, 20000)''')
        conn.execute(f'''
            UPDATE "{schema}".jobs SET state = 'running', attempt = 1, worker_id = 'w',
                   attempted_at = now(), lease_expires_at = now() + interval '10 s'
            WHERE id IN (SELECT id FROM "{schema}".jobs ORDER BY id LIMIT 100)''')
        conn.execute(f'ANALYZE "{schema}".jobs')
        ids = [r[0] for r in conn.execute(
            f'SELECT id FROM "{schema}".jobs WHERE worker_id = %s ORDER BY id LIMIT 50',
            ("w",))]
        text = app.store.q[name]  # type: ignore[attr-defined]
        conn.execute("BEGIN")
        (plan,) = conn.execute("EXPLAIN (FORMAT JSON) " + text,
                               {"now": None, **_BY_ID[name](ids)}).fetchone()
        conn.execute("ROLLBACK")
    nodes = _plan_nodes((plan if isinstance(plan, list) else json.loads(plan))[0]["Plan"])
    assert ("Index Scan", "jobs_pkey") in nodes, nodes
    assert not any(index.startswith("jobs_running") for _, index in nodes), nodes


@pytest.mark.parametrize("engine", ["postgres"], indirect=True)
@pytest.mark.parametrize(("table", "mode"), [
    ("empty", "generic"), ("loaded", "generic"), ("loaded", "custom"),
    ("analyzed", "generic"), ("analyzed", "custom")])
def test_fair_claim_plan_walks_the_group_index(
        app: App, db: dict[str, str], mode: str, table: str) -> None:
    """The fair queue's claim is prepared and Postgres keeps its generic plan (its
    window's LIMIT is a subquery, guessed alike either way): both must walk the group
    index by key and update the jobs found by id, whatever the statistics say. A generic
    plan is kept until the statistics change, so one made while the table was empty (a
    worker started before the first enqueue) must too; a plan made for its values on an
    empty table is made again at the next call, from the table's actual size."""
    schema = db["schema"]
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'ALTER TABLE "{schema}".jobs SET (autovacuum_enabled = false)')
        if table != "empty":
            conn.execute(f'''
                INSERT INTO "{schema}".jobs (queue, task, args, state, max_attempts,
                                             run_at, created_at, meta)
                SELECT 'bench', 'noop', '{{"args": []}}', 'available', 1, now(), now(),
                       jsonb_build_object('group', 'g' || (i % 1000))
                FROM generate_series(1, 100000) i''')
        if table == "analyzed":
            conn.execute(f'ANALYZE "{schema}".jobs')
        nodes = _explain_prepared(app, conn, "jobs_claim_fair", mode)
    kinds = [kind for kind, _ in nodes]
    assert not {"Hash Join", "Seq Scan", "Bitmap Heap Scan"} & set(kinds), nodes
    assert ("Index Scan", "jobs_group_claim_idx") in nodes, nodes
    assert ("Index Scan", "jobs_pkey") in nodes, nodes
