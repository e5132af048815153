"""Key rotation's statements (store.sealed): pages in id order, a rewrite guarded per
column by the value the page read."""

from __future__ import annotations

import json

from shiftwork.store.base import Store

from .helpers import LEASE, claim_one, insert


def _loads(text: str | None) -> object:
    return None if text is None else json.loads(text)


def test_pages_walk_the_jobs_in_id_order(store: Store) -> None:
    ids = insert(store, 5)
    first = store.sealed.page(0, 2)
    assert [r.id for r in first] == ids[:2] and first[0].task == "t"
    assert [r.id for r in store.sealed.page(first[-1].id, 10)] == ids[2:]
    assert store.sealed.page(ids[-1], 10) == []
    row = first[0]
    assert _loads(row.values["args"])["args"] == []  # type: ignore[index]
    assert row.values["result"] is None and _loads(row.values["errors"]) == []


def test_a_rewrite_changes_only_columns_that_still_hold_what_was_read(store: Store) -> None:
    [job_id] = insert(store)
    job = claim_one(store)
    store.long_jobs.touch(job.id, job.attempt, LEASE, checkpoint='{"page": 1}',
                          set_checkpoint=True, progress='{"done": 1}')
    [row] = store.sealed.page(0, 10)
    # meanwhile the worker writes a newer checkpoint: that one is kept
    store.long_jobs.touch(job.id, job.attempt, LEASE, checkpoint='{"page": 2}',
                          set_checkpoint=True)
    written = store.sealed.reseal([(job_id, {
        "args": (row.values["args"], '{"args":["new"],"kwargs":{}}'),
        "checkpoint": (row.values["checkpoint"], '{"page": "resealed"}'),
        "progress": (row.values["progress"], '{"done": 1, "message": "resealed"}')})])
    assert written == 1
    got = store.jobs.get(job_id)
    assert got.args == ["new"] and got.checkpoint == {"page": 2}
    assert got.progress == {"done": 1, "message": "resealed"}
    # nothing that still matches: no row written
    assert store.sealed.reseal([(job_id, {"checkpoint": ('{"page": 1}', '{"page": 9}')})]) == 0
    assert store.sealed.reseal([]) == 0
