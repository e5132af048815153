"""Turning stored rows into records, shared by both engines."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from shiftwork.core.bounds import MAX_ID
from shiftwork.core.crypt import SealedArgs, is_sealed
from shiftwork.core.errors import ShiftworkError
from shiftwork.core.states import TRANSITIONS, JobState
from shiftwork.model.new_job import DEDUP_META_KEY
from shiftwork.model.records import Job, QueueStats

log = logging.getLogger("shiftwork.store")

#: Columns of the schedule statements that hold instants, converted from each engine's
#: representation on read.
TIME_COLUMNS = frozenset({
    "now", "fire_at", "run_at", "recorded_at", "finished_at", "dms_at", "next_fire_at",
    "created_at", "updated_at", "removed_at", "last_fire_at", "last_success_at",
    "last_late_fire_at", "last_empty_fire_at", "last_full_fire_at", "job_started_at",
    "job_finished_at",
})


def loads(value: Any) -> Any:
    """Decode a JSON column stored as text (SQLite)."""
    return None if value is None else json.loads(value)


def decoded(value: Any) -> Any:
    """A JSON column psycopg already decoded (Postgres jsonb)."""
    return value


def split_args(value: Any) -> tuple[list[Any], dict[str, Any]]:
    payload = (json.loads(value) if isinstance(value, (str, bytes)) else value) or {}
    if is_sealed(payload):  # an encrypted task's: opened above the store (jobs/sealing.py)
        return SealedArgs([payload]), {}
    return list(payload.get("args", [])), dict(payload.get("kwargs", {}))


def job_from_row(row: dict[str, Any], to_dt: Any, json_col: Any) -> Job:
    args, kwargs = split_args(row["args"])
    meta = json_col(row["meta"]) or {}
    return Job(
        id=row["id"], task=row["task"], queue=row["queue"], state=JobState(row["state"]),
        args=args, kwargs=kwargs, priority=row["priority"], attempt=row["attempt"],
        max_attempts=row["max_attempts"], run_at=to_dt(row["run_at"]),
        created_at=to_dt(row["created_at"]), attempted_at=to_dt(row["attempted_at"]),
        finished_at=to_dt(row["finished_at"]), lease_expires_at=to_dt(row["lease_expires_at"]),
        worker_id=row["worker_id"], timeout=row["timeout"],
        # a key the unique_keys table holds is in the meta (model/new_job.py)
        unique_key=row["unique_key"] or meta.get(DEDUP_META_KEY),
        errors=json_col(row["errors"]) or [], result=json_col(row["result"]),
        progress=json_col(row["progress"]), checkpoint=json_col(row["checkpoint"]),
        cancel_requested=bool(row["cancel_requested"]), meta=meta,
        uncounted=row["uncounted"], peak_rss=row.get("peak_rss"), items=row.get("items"),
        hold_requested=bool(row.get("hold_requested")),
    )


def from_ts(value: float | None) -> datetime | None:
    """A time SQLite stored as Unix seconds, as an aware UTC datetime. A value past what
    datetime can hold (an infinite hold written before holds were bounded) reads as the
    last or first instant it can, so no read fails on a stored value."""
    if value is None:
        return None
    try:
        return datetime.fromtimestamp(value, UTC)
    except (OverflowError, ValueError, OSError):
        return _LAST if value > 0 else _FIRST


#: A keyset page's bound before the first page: above every id (a bigint).
FIRST_PAGE = MAX_ID
_LAST = datetime(9999, 1, 1, tzinfo=UTC)
_FIRST = datetime(1970, 1, 1, tzinfo=UTC)


def aware(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def legal_pairs() -> list[tuple[str, str]]:
    return [(old.value, new.value) for old, news in TRANSITIONS.items() for new in sorted(news)]


def log_rejected(kind: str, stale: list[tuple[int, int]]) -> None:
    for job_id, attempt in stale:
        log.warning(
            "%s for job %s attempt %s rejected: the job is no longer held by this attempt "
            "(lease lost and re-claimed, or cancelled)", kind, job_id, attempt,
            extra={"job_id": job_id, "attempt": attempt, "event": "job.stale_write"},
        )


def retry_blocked_by_key(job_id: int) -> ShiftworkError:
    return ShiftworkError(f"job {job_id} cannot be retried: another active job holds its "
                          "unique key")


def not_retryable(job: Job) -> ShiftworkError:
    return ShiftworkError(f"job {job.id} is {job.state}; only dead, cancelled or waiting jobs "
                          "can be retried")


def queue_stats_from_rows(active: list[Any],
                          finished: dict[str, tuple[int, int]]) -> list[QueueStats]:
    """Join the active-state counts with (succeeded, cancelled) counts, per queue, sorted.

    ``active`` rows are (queue, available, scheduled, running, dead, oldest_waiting_age,
    held).
    """
    out = {r[0]: QueueStats(queue=r[0], available=r[1], scheduled=r[2], running=r[3],
                            succeeded=finished.get(r[0], (0, 0))[0], dead=r[4],
                            cancelled=finished.get(r[0], (0, 0))[1],
                            oldest_waiting_age=r[5], held=r[6]) for r in active}
    for queue, (succeeded, cancelled) in finished.items():
        out.setdefault(queue, QueueStats(queue, 0, 0, 0, succeeded, 0, cancelled, None))
    return [out[k] for k in sorted(out)]


def search_params(text: str | None, state: JobState | None, queue: str | None,
                   limit: int) -> dict[str, Any]:
    text = (text or "").strip() or None
    # isascii: "²" and "①" are digits to isdigit() but not to int()
    digits = text is not None and text.isascii() and text.isdigit() and len(text) < 19
    job_id = int(text) if digits and text is not None else None
    return {"text": text, "id": job_id, "state": state.value if state else None,
            "queue": queue or None, "limit": limit}
