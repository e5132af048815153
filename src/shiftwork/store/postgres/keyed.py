"""Unique keys in a batch insert: which keys an active job already held, and the result
per job once the holders are known. Shared by the sync and the async insert."""

from __future__ import annotations

from typing import Any

from shiftwork.model.new_job import NewJob
from shiftwork.model.records import EnqueueResult


def keys_taken(jobs: list[NewJob], rows: list[Any]) -> list[str]:
    """The unique keys of ``jobs`` that the insert's ``rows`` (id, key) did not take: an
    active job already holds them."""
    inserted = {key for _, key in rows if key is not None}
    return sorted({j.unique_key for j in jobs if j.unique_key and j.unique_key not in inserted})


def settle_keys(jobs: list[NewJob], rows: list[Any], missing: list[str],
                found: list[Any]) -> list[EnqueueResult] | None:
    """One result per job, in order: inserted, or the active job holding its key (``found``:
    (id, key) rows for ``missing``). None: a holder finished meanwhile; insert again."""
    inserted_by_key: dict[str, int] = {}
    plain_ids = iter([r[0] for r in rows if r[1] is None])
    for job_id, key in rows:
        if key is not None:
            inserted_by_key[key] = job_id
    existing = {key: job_id for job_id, key in found}
    if len(existing) < len(missing):
        return None
    results: list[EnqueueResult] = []
    seen: set[str] = set()
    for j in jobs:
        if j.unique_key is None:
            results.append(EnqueueResult(next(plain_ids), True))
        elif j.unique_key in inserted_by_key and j.unique_key not in seen:
            seen.add(j.unique_key)
            results.append(EnqueueResult(inserted_by_key[j.unique_key], True))
        else:
            job_id = inserted_by_key.get(j.unique_key) or existing[j.unique_key]
            results.append(EnqueueResult(job_id, False))
    return results
