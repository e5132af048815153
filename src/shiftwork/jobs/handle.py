"""What ``task.enqueue`` returns (a handle to wait on the job's result) and the checks of
``after=`` / ``on_failure=`` that enqueue runs: below the task and composition modules,
which both use them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any, Generic, TypeVar, cast

from shiftwork.core.errors import ConfigurationError, DependencyError
from shiftwork.jobs.stream_reader import read_stream, read_stream_async
from shiftwork.jobs.waiting import ResultWaiter, WorkflowTalk, wait_result, wait_result_async
from shiftwork.model.records import EnqueueResult

R = TypeVar("R")

ON_FAILURE = ("cancel", "run")


class JobHandle(EnqueueResult, Generic[R]):
    """What ``task.enqueue`` returns: the job's id, and a way to wait for its result.

    Still an :class:`EnqueueResult` (``id``, ``created``; compares equal to one).
    """

    _results: ResultWaiter

    def __new__(cls, id: int, created: bool, results: ResultWaiter) -> JobHandle[R]:
        self = super().__new__(cls, id, created)
        self._results = results
        return self

    def result(self, timeout: float | None = 30.0) -> R:
        """Block until the job finished and return its task's return value.

        Raises :class:`~shiftwork.core.errors.JobFailed` (dead; ``.error`` is its last error),
        :class:`~shiftwork.core.errors.JobCancelled`, or ``TimeoutError``.
        """
        return cast(R, wait_result(self._results, self.id, timeout))

    async def result_async(self, timeout: float | None = 30.0) -> R:
        """:meth:`result` for asyncio code."""
        return cast(R, await wait_result_async(self._results, self.id, timeout))

    # -- a workflow's: queries and updates (docs/workflows.md) ---------------------------

    def _talk(self) -> WorkflowTalk:
        if self._results.talk is None:
            raise ConfigurationError("this handle's App cannot talk to workflows")
        return self._results.talk

    def query(self, key: str, default: Any = None) -> Any:
        """The value the workflow last published under ``key`` (``wf.set_state``), or
        ``default``; read from the database, without running the workflow's code."""
        return self._talk().query(self.id, key, default)

    def state(self) -> dict[str, Any]:
        """Every key the workflow published, with its value."""
        return self._talk().state(self.id)

    def update(self, name: str, payload: Any = None, *, timeout: float | None = 30.0) -> Any:
        """Send the workflow an update (a stored request) and block until it was handled:
        its handler's result (``wf.wait_for_update``). Raises
        :class:`~shiftwork.workflow.UpdateRejected` if the handler refused it, and
        :class:`~shiftwork.workflow.UpdateTimeout` (a ``TimeoutError``) after ``timeout``
        seconds (the request stays delivered)."""
        return self._talk().update(self.id, name, payload, timeout=timeout)

    async def update_async(self, name: str, payload: Any = None, *,
                           timeout: float | None = 30.0) -> Any:
        """:meth:`update` for asyncio code."""
        return await self._talk().update_async(self.id, name, payload, timeout=timeout)

    def read_stream(self, key: str, offset: int = 0, timeout: float | None = None
                    ) -> Iterator[Any]:
        """The values a workflow writes to its stream ``key`` (``wf.write_stream``), from
        ``offset`` on, as they arrive; ends when the workflow closes the stream or ends.
        ``timeout``: the most seconds to wait for the next value (then TimeoutError)."""
        return read_stream(self._results, self.id, key, offset, timeout)

    def read_stream_async(self, key: str, offset: int = 0, timeout: float | None = None
                          ) -> AsyncIterator[Any]:
        """:meth:`read_stream` for asyncio code: ``async for value in ...``."""
        return read_stream_async(self._results, self.id, key, offset, timeout)


def dependency_ids(after: Any) -> tuple[int, ...]:
    """``after=`` as job ids: handles, EnqueueResults or ints."""
    if isinstance(after, (EnqueueResult, int)):
        after = [after]
    ids = []
    for a in after:
        job_id = a.id if isinstance(a, EnqueueResult) else a
        if isinstance(job_id, bool) or not isinstance(job_id, int) or job_id < 1:
            raise DependencyError(f"after= takes jobs (what enqueue returned) or job ids, "
                                  f"not {a!r}")
        ids.append(job_id)
    return tuple(dict.fromkeys(ids))


def check_on_failure(on_failure: str) -> str:
    if on_failure not in ON_FAILURE:
        raise DependencyError(f"on_failure={on_failure!r}: must be 'cancel' (do not run "
                              "after a parent died or was cancelled) or 'run'")
    return on_failure
