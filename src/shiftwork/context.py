"""What a running task sees of its job: ids, attempt, cancellation."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import JobCancelled

if TYPE_CHECKING:
    from .app import App


@dataclass
class JobContext:
    """Passed to a task whose first parameter is named ``ctx``."""

    app: App
    job_id: int
    task: str
    queue: str
    attempt: int
    max_attempts: int
    last_checkpoint: Any = None
    meta: dict[str, Any] = field(default_factory=dict)
    _cancelled: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def cancelled(self) -> bool:
        """True once someone asked for this job to stop."""
        return self._cancelled.is_set()

    def raise_if_cancelled(self) -> None:
        if self._cancelled.is_set():
            raise JobCancelled(f"job {self.job_id} was cancelled")

    def _request_cancel(self) -> None:
        self._cancelled.set()
