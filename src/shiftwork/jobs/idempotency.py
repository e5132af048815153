"""Effects that must happen once: effect keys, and the job's fenced transaction.

``tx.once(key, fn)`` inside ``ctx.transaction()`` is exactly once for writes to the
queue's own database: the key, your writes and the job's fenced row commit together.
``ctx.once(key, fn)`` records the result of an effect elsewhere; it is at least once
between the effect and its record, so pass the key to the other system as well.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, TypeVar

from shiftwork.core.bounds import seconds
from shiftwork.core.errors import ConfigurationError
from shiftwork.core.payload import Limit, encode_json
from shiftwork.jobs.checkpoint import encode_progress
from shiftwork.jobs.running import RunningJob
from shiftwork.model.records import Touch

R = TypeVar("R")

MAX_KEY_LENGTH = 500


def check_key(key: object) -> str:
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_LENGTH:
        raise ConfigurationError(
            f"effect key {key!r} must be a non-empty string of at most {MAX_KEY_LENGTH} "
            "characters, e.g. f'invoice:{customer_id}:{period}'")
    return key


def _keep(ctx: RunningJob, keep: float | None) -> float:
    if keep is None:
        return ctx.runtime.settings.effect_retention
    return seconds(keep, "once: keep", allow_zero=False)


class Transaction:
    """Yielded by ``ctx.transaction()``: one transaction on the queue's database.

    ``conn`` is the native connection (psycopg: ``%s`` placeholders; sqlite3: ``?``).
    Enqueue jobs in it with ``task.using(conn=tx.conn).enqueue(...)``.
    """

    def __init__(self, ctx: RunningJob, conn: Any) -> None:
        self.ctx = ctx
        self.conn = conn
        self.checkpoint_json: str | None = None
        self.progress_json: str | None = None

    def execute(self, query: str, params: Any = ()) -> Any:
        """Run a statement in this transaction; returns the driver's cursor."""
        return self.conn.execute(query, params)

    def checkpoint(self, cursor: Any) -> None:
        """Save ``cursor`` as the job's checkpoint when (and only if) this transaction commits."""
        self.checkpoint_json = encode_json(cursor, f"job {self.ctx.job_id}: checkpoint",
                                           self.ctx.runtime.settings.limit("max_checkpoint_bytes"))

    def progress(self, done: float, total: float | None = None,
                 message: str | None = None) -> None:
        """Progress written with this transaction's commit (dropped if it rolls back)."""
        self.progress_json = encode_progress(self.ctx.job_id, done, total, message,
                                             self.ctx.runtime.settings.limit("max_progress_message_bytes"))

    def once(self, key: str, fn: Callable[[], R], *, keep: float | None = None) -> R:
        """Run ``fn`` (its writes going through this transaction) once per ``key``.

        The key is taken first: a concurrent attempt using the same key waits for this
        transaction (Postgres) or cannot start (SQLite's single writer), then finds the
        key and gets this run's result without calling ``fn``.
        """
        check_key(key)
        store = self.ctx.runtime.store
        if not store.long_jobs.effect_keys_insert(key, self.ctx.job_id, self.ctx.attempt,
                                        _keep(self.ctx, keep), None, conn=self.conn):
            found = store.long_jobs.effect_keys_get(key, conn=self.conn)
            return found.result if found is not None else None  # type: ignore[return-value]
        data = encode_json(fn(), f"effect {key!r}: result", _result_limit(self.ctx))
        store.long_jobs.effect_keys_set_result(key, data, conn=self.conn)
        return json.loads(data)  # type: ignore[no-any-return]

    def commit_fence(self) -> Touch:
        """The job's fenced write, last in the transaction; raises LeaseLost to roll back."""
        ctx = self.ctx
        set_checkpoint = self.checkpoint_json is not None
        return ctx._touch(checkpoint=self.checkpoint_json, set_checkpoint=set_checkpoint,
                          conn=self.conn)


def _result_limit(ctx: RunningJob) -> Limit:
    return ctx.runtime.settings.limit("max_result_bytes")


def once_outside(ctx: RunningJob, key: str, fn: Callable[[], R], keep: float | None,
                 transaction: Callable[[], AbstractContextManager[Transaction]]) -> R:
    """``ctx.once``: the record of an effect that happens outside the queue's database.

    ``transaction`` is the job's ``ctx.transaction``, which commits with its fenced row.
    """
    check_key(key)
    seconds = _keep(ctx, keep)
    store = ctx.runtime.store
    found = store.long_jobs.effect_keys_get(key)
    if found is not None:
        return found.result  # type: ignore[no-any-return]
    data = encode_json(fn(), f"effect {key!r}: result", _result_limit(ctx))
    # Recorded with the job's fenced write: a stale attempt's record is rolled back.
    with transaction() as tx:
        if not store.long_jobs.effect_keys_insert(key, ctx.job_id, ctx.attempt, seconds, data,
                                        conn=tx.conn):
            # Another attempt recorded it first: both ran fn; the key passed
            # downstream is what keeps the other system from doing it twice.
            first = store.long_jobs.effect_keys_get(key, conn=tx.conn)
            if first is not None:
                data = encode_json(first.result, f"effect {key!r}: result", _result_limit(ctx))
    return json.loads(data)  # type: ignore[no-any-return]
