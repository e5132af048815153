"""Talking to a running workflow from any process: ``app.workflows`` (and the handle's
``query``/``update``, which come here).

Queries read what the workflow published with ``wf.set_state`` (the ``workflow_state``
rows): no workflow code runs. An update is a stored request (a ``workflow_updates`` row,
which wakes the workflow); the workflow resolves it at its ``wf.wait_for_update``, the
result recorded as that call's step in the same transaction, and the caller, waiting on
the listener job results use (NOTIFY on the "done" topic on PostgreSQL, ``data_version``
on SQLite, a re-read each second as a safety net), reads the outcome.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading

# Real time, not the runtime's clock: a caller's timeout bounds a real wait.
import time
from typing import TYPE_CHECKING, Any

from shiftwork.core.errors import JobNotFoundError
from shiftwork.core.payload import MAX_EVENT_NAME, MAX_STEP_NAME, check_label, encode_json
from shiftwork.core.states import FINAL
from shiftwork.jobs.waiting import FALLBACK_POLL
from shiftwork.model.records import UpdateOutcome, WorkflowUpdate
from shiftwork.workflow.errors import UpdateRejected, UpdateTimeout, WorkflowError
from shiftwork.workflow.events import require_workflow

if TYPE_CHECKING:
    from shiftwork.runtime import Runtime


class Workflows:
    """``app.workflows``: read a workflow's published state, send it updates."""

    def __init__(self, rt: Runtime) -> None:
        self._rt = rt

    def state(self, workflow_id: int) -> dict[str, Any]:
        """Every key workflow ``workflow_id`` published (``wf.set_state``), with its value."""
        state = self._rt.store.workflows.state_get(workflow_id)
        if not state:
            self._rt.store.jobs.get(workflow_id)  # JobNotFoundError names a missing one
        return state

    def query(self, workflow_id: int, key: str, default: Any = None) -> Any:
        """The value workflow ``workflow_id`` last published under ``key``, or ``default``."""
        check_label(key, "workflow state key", MAX_STEP_NAME)
        return self.state(workflow_id).get(key, default)

    def updates(self, workflow_id: int, limit: int = 100) -> list[WorkflowUpdate]:
        """The newest updates sent to a workflow: pending, accepted or rejected."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 10_000:
            raise WorkflowError(f"updates: limit must be a whole number from 1 to 10000, "
                                f"not {limit!r}")
        return self._rt.store.workflows.updates_list(workflow_id, limit)

    def send_update(self, workflow_id: int, name: str, payload: Any = None) -> int:
        """Store an update for the workflow (and wake it) without waiting; its id."""
        check_label(name, "update name", MAX_EVENT_NAME)
        body = encode_json(payload, f"update {name!r}: payload",
                           self._rt.settings.limit("max_event_payload_bytes"))
        require_workflow(self._rt, workflow_id, f"update {name!r}")
        return self._rt.store.workflows.update_send(workflow_id, name, body)

    def update(self, workflow_id: int, name: str, payload: Any = None, *,
               timeout: float | None = 30.0) -> Any:
        """Send an update and block until the workflow handled it: its handler's result.

        Raises :class:`UpdateRejected` (the handler raised), :class:`UpdateTimeout` (a
        ``TimeoutError``: no result within ``timeout`` seconds; the request stays
        delivered), or :class:`WorkflowError` if the workflow finished without handling it.
        """
        _check_timeout(timeout)
        update_id = self.send_update(workflow_id, name, payload)
        woken = threading.Event()
        withdraw = self._rt.results.on_wake(woken.set)
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while True:
                woken.clear()  # before the read: a wake-up after it ends the wait below
                done, value = _settled(self._rt.store.workflows.update_read(update_id),
                                       workflow_id, name, update_id)
                if done:
                    return value
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise _timed_out(workflow_id, name, update_id, timeout)
                woken.wait(FALLBACK_POLL if left is None else min(FALLBACK_POLL, left))
        finally:
            withdraw()

    async def update_async(self, workflow_id: int, name: str, payload: Any = None, *,
                           timeout: float | None = 30.0) -> Any:
        """:meth:`update` for asyncio code: no thread is held while it waits."""
        _check_timeout(timeout)
        update_id = await asyncio.to_thread(self.send_update, workflow_id, name, payload)
        loop = asyncio.get_running_loop()
        woken = asyncio.Event()

        def wake() -> None:
            loop.call_soon_threadsafe(woken.set)
        withdraw = await asyncio.to_thread(self._rt.results.on_wake, wake)
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while True:
                woken.clear()
                out = await asyncio.to_thread(self._rt.store.workflows.update_read, update_id)
                done, value = _settled(out, workflow_id, name, update_id)
                if done:
                    return value
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise _timed_out(workflow_id, name, update_id, timeout)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(woken.wait(), FALLBACK_POLL if left is None
                                           else min(FALLBACK_POLL, left))
        finally:
            withdraw()


def _check_timeout(timeout: float | None) -> None:
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float)
                                or not timeout >= 0):
        raise WorkflowError(f"update: timeout must be a number of seconds >= 0 or None, "
                            f"not {timeout!r}")


def _settled(out: UpdateOutcome | None, workflow_id: int, name: str,
             update_id: int) -> tuple[bool, Any]:
    """(True, result) once resolved; raises for a rejection or an update that never will be."""
    if out is None:
        raise JobNotFoundError(f"update {update_id} to workflow {workflow_id} is gone "
                               "(the workflow was pruned)")
    if out.status == "accepted":
        return True, out.result
    if out.status == "rejected":
        err = out.error or {}
        raise UpdateRejected(f"workflow {workflow_id} rejected update {name!r}: "
                             f"{err.get('type', 'Error')}: {err.get('message', '')}",
                             str(err.get("type", "")), str(err.get("message", "")))
    if out.job_state in FINAL:
        raise WorkflowError(f"workflow {workflow_id} finished ({out.job_state}) without "
                            f"handling update {name!r} (id {update_id})")
    return False, None


def _timed_out(workflow_id: int, name: str, update_id: int,
               timeout: float | None) -> UpdateTimeout:
    return UpdateTimeout(f"update {name!r} to workflow {workflow_id} got no result within "
                         f"{timeout} seconds; it stays delivered (id {update_id}) and the "
                         "workflow may still handle it (app.workflows.updates shows it)",
                         update_id)
