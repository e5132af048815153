"""Records the visibility queries return."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..states import JobState


@dataclass(frozen=True)
class QueueMinute:
    """How many jobs of one queue finished, and how, in one minute (UTC)."""

    queue: str
    minute: datetime
    succeeded: int = 0
    retried: int = 0
    dead: int = 0
    cancelled: int = 0

    @property
    def finished(self) -> int:
        return self.succeeded + self.dead + self.cancelled


def search_params(text: str | None, state: JobState | None, queue: str | None,
                   limit: int) -> dict[str, Any]:
    text = (text or "").strip() or None
    job_id = int(text) if text is not None and text.isdigit() and len(text) < 19 else None
    return {"text": text, "id": job_id, "state": state.value if state else None,
            "queue": queue or None, "limit": limit}
