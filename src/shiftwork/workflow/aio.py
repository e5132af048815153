"""Async workflow bodies: ``async def body(wf, ...)`` with ``await wf.step(...)``.

The same recording core as sync bodies (one implementation, so the two cannot drift):
each call runs the sync :class:`Workflow` method on a thread (its database writes must
not block the event loop); an ``async def`` step function runs back on the loop.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from shiftwork.core.backoff import Backoff
from shiftwork.workflow.context import Workflow


class AsyncWorkflow:
    """Passed as the first argument of an ``async def`` workflow."""

    def __init__(self, wf: Workflow, loop: asyncio.AbstractEventLoop) -> None:
        self.wf = wf
        self.id = wf.id
        self.ctx = wf.ctx
        self.runtime = wf.runtime
        self._loop = loop

    def _sync(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        if not inspect.iscoroutinefunction(fn):
            return fn

        def on_loop(*args: Any, **kwargs: Any) -> Any:
            return asyncio.run_coroutine_threadsafe(fn(*args, **kwargs), self._loop).result()
        return on_loop

    async def step(self, name: str, fn: Callable[..., Any], *args: Any,
                   compensate: Callable[[Any], Any] | None = None,
                   retry: Backoff | None = None, max_attempts: int | None = None,
                   timeout: float | None = None, **kwargs: Any) -> Any:
        """As :meth:`Workflow.step`; ``fn`` and ``compensate`` may be ``async def``."""
        undo = self._sync(compensate) if compensate is not None else None
        return await asyncio.to_thread(
            self.wf.step, name, self._sync(fn), *args, compensate=undo, retry=retry,
            max_attempts=max_attempts, timeout=timeout, **kwargs)

    async def now(self, name: str) -> datetime:
        return await asyncio.to_thread(self.wf.now, name)

    async def sleep(self, name: str, duration: float | timedelta) -> None:
        await asyncio.to_thread(self.wf.sleep, name, duration)

    async def wait_for_event(self, name: str, *, timeout: float | timedelta | None = None,
                             step: str | None = None) -> Any:
        return await asyncio.to_thread(self.wf.wait_for_event, name, timeout=timeout,
                                       step=step)

    async def set_state(self, key: str, value: Any) -> None:
        """As :meth:`Workflow.set_state`."""
        await asyncio.to_thread(self.wf.set_state, key, value)

    async def wait_for_update(self, name: str, handler: Callable[[Any], Any] | None = None, *,
                              timeout: float | timedelta | None = None,
                              step: str | None = None) -> Any:
        """As :meth:`Workflow.wait_for_update`; ``handler`` may be ``async def``."""
        fn = self._sync(handler) if handler is not None else None
        return await asyncio.to_thread(self.wf.wait_for_update, name, fn, timeout=timeout,
                                       step=step)

    async def patched(self, patch_id: str) -> bool:
        return await asyncio.to_thread(self.wf.patched, patch_id)

    async def deprecate_patch(self, patch_id: str) -> None:
        await asyncio.to_thread(self.wf.deprecate_patch, patch_id)

    async def child(self, workflow: Any, *args: Any, name: str | None = None,
                    **kwargs: Any) -> Any:
        """As :meth:`Workflow.child`."""
        return await asyncio.to_thread(self.wf.child, workflow, *args, name=name, **kwargs)

    def call(self, name: str, task: Any, *args: Any, **kwargs: Any) -> Any:
        """As :meth:`Workflow.call` (not awaited: it only describes a branch)."""
        return self.wf.call(name, task, *args, **kwargs)

    async def parallel(self, *calls: Any, name: str | None = None) -> list[Any]:
        """As :meth:`Workflow.parallel`."""
        return await asyncio.to_thread(self.wf.parallel, *calls, name=name)

    async def write_stream(self, key: str, value: Any) -> int:
        """As :meth:`Workflow.write_stream`."""
        return await asyncio.to_thread(self.wf.write_stream, key, value)

    async def close_stream(self, key: str) -> None:
        """As :meth:`Workflow.close_stream`."""
        await asyncio.to_thread(self.wf.close_stream, key)

    async def continue_as_new(self, *args: Any, **kwargs: Any) -> None:
        """As :meth:`Workflow.continue_as_new` (raises; never returns)."""
        await asyncio.to_thread(self.wf.continue_as_new, *args, **kwargs)
