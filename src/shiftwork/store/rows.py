"""Turning stored rows into records, shared by both engines."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from ..job import Job
from ..states import TRANSITIONS, JobState

log = logging.getLogger("shiftwork.store")


def loads(value: Any) -> Any:
    """JSON columns arrive decoded from Postgres and as text from SQLite."""
    if isinstance(value, (str, bytes)):
        return json.loads(value)
    return value


def split_args(value: Any) -> tuple[list[Any], dict[str, Any]]:
    payload = loads(value) or {}
    return list(payload.get("args", [])), dict(payload.get("kwargs", {}))


def job_from_row(row: dict[str, Any], to_dt: Any, json_text: bool = True) -> Job:
    """``json_text``: JSON columns hold text (SQLite); False when the driver decoded them
    (Postgres jsonb), where a JSON string value must not be decoded a second time."""
    decode = loads if json_text else (lambda value: value)
    args, kwargs = split_args(row["args"])
    return Job(
        id=row["id"], task=row["task"], queue=row["queue"], state=JobState(row["state"]),
        args=args, kwargs=kwargs, priority=row["priority"], attempt=row["attempt"],
        max_attempts=row["max_attempts"], run_at=to_dt(row["run_at"]),
        created_at=to_dt(row["created_at"]), attempted_at=to_dt(row["attempted_at"]),
        finished_at=to_dt(row["finished_at"]), lease_expires_at=to_dt(row["lease_expires_at"]),
        worker_id=row["worker_id"], unique_key=row["unique_key"], timeout=row["timeout"],
        errors=decode(row["errors"]) or [], result=decode(row["result"]),
        progress=decode(row["progress"]), checkpoint=decode(row["checkpoint"]),
        cancel_requested=bool(row["cancel_requested"]), meta=decode(row["meta"]) or {},
    )


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
