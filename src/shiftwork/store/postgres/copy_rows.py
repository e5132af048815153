"""Bulk enqueue on Postgres: jobs streamed with a binary COPY.

Binary, because the server then stores each field as sent instead of parsing text
(timestamps and JSON are most of a text COPY's cost): 100,000 jobs went from ~160k
to ~200k rows/s with the client's work included (benchmarks/). The JSON columns
arrive already validated and encoded, so they are sent as jsonb's binary form (a
version byte, then the text) without being decoded and encoded again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from psycopg import Cursor, postgres
from psycopg.adapt import Dumper
from psycopg.pq import Format

from shiftwork.model.new_job import NewJob

if TYPE_CHECKING:
    from shiftwork.model.new_job import Mark

_JSONB_VERSION = b"\x01"
COLUMNS = ["int8", "text", "text", "jsonb", "text", "int2", "int4", "timestamptz",
           "timestamptz", "float8", "jsonb"]
#: The jobs of a graph or a group carry these too (jobs_copy_marked).
MARK_COLUMNS = ["int4", "bool", "int8", "int2"]


class EncodedJsonbDumper(Dumper):
    """A ``str`` holding JSON text, as a binary jsonb field."""

    format = Format.BINARY
    oid = postgres.types["jsonb"].oid

    def dump(self, obj: Any) -> bytes:
        text: str = obj
        return _JSONB_VERSION + text.encode()


def copy_jobs(cursor: Cursor[Any], statement: str, ids: Sequence[int], jobs: Iterable[NewJob],
              now: datetime, marks: Sequence[Mark] | None = None) -> set[str]:
    """Write ``jobs`` with their reserved ``ids`` through ``statement`` (a binary COPY),
    with their ``marks`` if given (``statement`` then names those columns too); returns
    the queues that got a job due now (to wake their workers)."""
    cursor.adapters.register_dumper(str, EncodedJsonbDumper)  # this cursor only
    due: set[str] = set()
    with cursor.copy(statement) as copy:
        copy.set_types(COLUMNS if marks is None else COLUMNS + MARK_COLUMNS)
        write = copy.write_row
        for i, (job_id, j) in enumerate(zip(ids, jobs, strict=True)):
            run_at = now if j.run_at is None else j.run_at
            state = "available" if run_at <= now else "scheduled"
            if state == "available":
                due.add(j.queue)
            row: tuple[Any, ...] = (job_id, j.queue, j.task, j.args_json, state, j.priority,
                                    j.max_attempts, run_at, now, j.timeout, j.meta_json)
            if marks is not None:
                m = marks[i]
                row += (m.deps_pending, m.watched, m.group_id, 0 if m.group_id is None else 1)
            write(row)
    return due


STAGE_COLUMNS = ["int4", "text", "text", "jsonb", "int2", "int4", "timestamptz", "text",
                 "float8", "jsonb"]


def copy_staged(cursor: Cursor[Any], statement: str, jobs: Sequence[NewJob]) -> None:
    """Write ``jobs`` (keyed ones among them) into the transaction's staging table
    (jobs_stage_create), in order; jobs_insert_staged then inserts them."""
    cursor.adapters.register_dumper(str, EncodedJsonbDumper)  # this cursor only
    with cursor.copy(statement) as copy:
        copy.set_types(STAGE_COLUMNS)
        write = copy.write_row
        for i, j in enumerate(jobs):
            write((i, j.task, j.queue, j.args_json, j.priority, j.max_attempts, j.run_at,
                   j.unique_key, j.timeout, j.meta_json))
