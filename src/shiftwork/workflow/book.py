"""``app.workflows``: the actions people take on workflow instances (beside the
``@app.workflow`` declarations): talk to one (workflow/talk.py), fork one, read its
streams."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from shiftwork.jobs.handle import JobHandle
from shiftwork.jobs.stream_reader import read_stream
from shiftwork.model.streams import StreamKey
from shiftwork.workflow.fork import fork
from shiftwork.workflow.talk import Workflows

if TYPE_CHECKING:
    pass


class WorkflowBook(Workflows):
    """Workflow instances by id (``app.workflows``): what :class:`Workflows` does (state,
    updates), and forks and streams: ``app.workflows.fork(id, from_step="charge")``..."""

    def fork(self, workflow_id: int, from_step: str | int) -> JobHandle[Any]:
        """Start a new run of the workflow that keeps the recorded results of the steps
        before ``from_step`` (a step's name, or its position: 0 is the first) and runs the
        rest on the current code; the original is left as it is. Raises
        :class:`~shiftwork.workflow.WorkflowError` for a step it has not recorded."""
        return fork(self._rt, workflow_id, from_step)

    def read_stream(self, workflow_id: int, key: str, offset: int = 0,
                    timeout: float | None = None) -> Iterator[Any]:
        """As ``handle.read_stream``, by the workflow's id."""
        return read_stream(self._rt.results, workflow_id, key, offset, timeout)

    def streams(self, workflow_id: int) -> list[StreamKey]:
        """The workflow's streams: each key, how many values, whether it is closed."""
        return self._rt.store.streams.keys(workflow_id)

    def generation(self, workflow_id: int) -> int | None:
        """How many times the workflow continued as new (None: it has not begun a run)."""
        return self._rt.store.reruns.generation(workflow_id)
