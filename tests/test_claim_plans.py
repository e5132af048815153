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
from typing import Any

import psycopg
import pytest

from shiftwork import App

from .conftest import PG_DSN


def _plan_nodes(plan: dict[str, Any]) -> list[tuple[str, str]]:
    out = [(plan["Node Type"], plan.get("Index Name", ""))]
    for child in plan.get("Plans", []):
        out += _plan_nodes(child)
    return out


@pytest.mark.parametrize("engine", ["postgres"], indirect=True)
def test_generic_claim_plan_walks_the_index_with_stale_statistics(
        app: App, db: dict[str, str]) -> None:
    schema = db["schema"]
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'ALTER TABLE "{schema}".jobs SET (autovacuum_enabled = false)')
        conn.execute(f'''
            INSERT INTO "{schema}".jobs (queue, task, args, state, max_attempts, run_at,
                                         created_at)
            SELECT 'bench', 'noop', '[]', 'available', 1, now(), now()
            FROM generate_series(1, 600000)''')
        # The store's own statement, as a server-side prepared statement (its %(name)s
        # placeholders become $n), planned generically.
        text = app.store.q["jobs_claim"]  # type: ignore[attr-defined]
        names: list[str] = []

        def number(m: re.Match[str]) -> str:
            if m.group(1) not in names:
                names.append(m.group(1))
            return f"${names.index(m.group(1)) + 1}"

        conn.execute("SET plan_cache_mode = force_generic_plan")
        conn.execute("PREPARE claim AS " + re.sub(r"%\((\w+)\)s", number, text))
        values = {"queue": "bench", "limit": 50, "worker": "w", "lease": 10.0, "now": None}
        args = ", ".join("NULL::timestamptz" if n == "now" else
                         psycopg.sql.Literal(values[n]).as_string(conn) for n in names)
        conn.execute("BEGIN")
        (plan,) = conn.execute(f"EXPLAIN (FORMAT JSON) EXECUTE claim({args})").fetchone()
        conn.execute("ROLLBACK")
    nodes = _plan_nodes((plan if isinstance(plan, list) else json.loads(plan))[0]["Plan"])
    kinds = [kind for kind, _ in nodes]
    assert "Sort" not in kinds, nodes
    assert ("Index Scan", "jobs_claim_idx") in nodes, nodes
