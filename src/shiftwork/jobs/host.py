"""What the modules below the App need of it, and of a running job, as Protocols.

The App (app.py) and the job context (context.py) are the one implementation of each.
Naming them here lets the task, the job context and the checkpoint and effect-key
helpers be typed without importing the App or the context, so no import runs back up.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from shiftwork.core.clock import Clock
from shiftwork.core.events import EventBus
from shiftwork.core.settings import Settings
from shiftwork.model.new_job import NewJob
from shiftwork.model.records import EnqueueResult, Touch
from shiftwork.store.base import Store

if TYPE_CHECKING:
    from shiftwork.core.states import JobState
    from shiftwork.flow.limits import ClaimFlow
    from shiftwork.jobs.task import Task
    from shiftwork.model.records import Job


class JobHost(Protocol):
    """What a running job's context needs of its App."""

    settings: Settings
    events: EventBus
    clock: Clock

    @property
    def store(self) -> Store: ...

    def insert_rows(self, rows: list[NewJob], conn: Any = None) -> list[EnqueueResult]:
        """The end of every enqueue path (tracing included)."""


class RunningJob(Protocol):
    """What the checkpoint and effect-key helpers need of a job's context."""

    job_id: int
    attempt: int
    last_checkpoint: Any
    app: JobHost

    def checkpoint(self, cursor: Any) -> None: ...

    def stage_progress(self, done: float, total: float | None = None,
                       message: str | None = None) -> None: ...

    def progress(self, done: float, total: float | None = None,
                 message: str | None = None) -> None: ...

    def flush_progress(self) -> None: ...

    def _touch(self, *, checkpoint: str | None = None, set_checkpoint: bool = False,
               conn: Any = None) -> Touch: ...


class AppBase:
    """The App's base class: code below the App (the loader, the testing tools) tells an
    App from anything else by it, without importing the App."""


class RunnerHost(JobHost, Protocol):
    """What runs jobs outside a worker's own loop needs of the App: the executor (and
    its child processes) and the testing tools (drain, inline)."""

    import_path: str | None

    @property
    def tasks(self) -> Mapping[str, Task[Any, Any]]: ...

    @property
    def queue_options(self) -> Mapping[str, Any]: ...

    @property
    def enqueue_hooks(self) -> list[Callable[[list[EnqueueResult], set[str] | None], None]]: ...

    def get_task(self, name: str) -> Task[Any, Any]: ...

    def concurrency_limits(self, queue: str) -> dict[str, int]: ...

    def claim_flow(self, queue: str) -> ClaimFlow: ...

    def list_jobs(self, state: JobState | str | None = None, queue: str | None = None,
                  task: str | None = None, limit: int = 50) -> list[Job]: ...
