"""What the checkpoint and effect-key helpers need of a running job's context.

The job context (context.py) is the one implementation; naming it here lets those helpers
be typed without importing the context, which imports them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from shiftwork.model.records import Touch

if TYPE_CHECKING:
    from shiftwork.runtime import Runtime


class RunningJob(Protocol):
    """A job's context, as the checkpoint and effect-key helpers see it."""

    job_id: int
    attempt: int
    last_checkpoint: Any
    runtime: Runtime

    def checkpoint(self, cursor: Any) -> None: ...

    def stage_progress(self, done: float, total: float | None = None,
                       message: str | None = None) -> None: ...

    def progress(self, done: float, total: float | None = None,
                 message: str | None = None) -> None: ...

    def flush_progress(self) -> None: ...

    def _touch(self, *, checkpoint: str | None = None, set_checkpoint: bool = False,
               conn: Any = None) -> Touch: ...
