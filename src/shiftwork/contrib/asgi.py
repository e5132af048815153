"""shiftwork inside an ASGI application (FastAPI, Starlette, any framework with a lifespan).

>>> api = FastAPI(lifespan=lifespan(app))
>>> @api.post("/signup")
... async def signup(user_id: int) -> None:
...     await send_welcome.enqueue_async(user_id)

The dashboard is an ASGI app of its own: mount it at a prefix, behind the host
application's own login (``create_dashboard(app, authenticate=...)``); see
docs/integrations.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from shiftwork.app import App


def lifespan(app: App, *, migrate: bool = False
             ) -> Callable[[Any], AbstractAsyncContextManager[None]]:
    """A lifespan for the host application: opens ``app``'s database at start-up (and,
    with ``migrate=True``, applies migrations there), closes its connections at shutdown:
    the sync pool and the async pool that ``enqueue_async`` opens on first use.

    Pass it as ``FastAPI(lifespan=lifespan(app))`` or ``Starlette(lifespan=...)``.
    """

    @asynccontextmanager
    async def span(_host: Any) -> AsyncIterator[None]:
        # The blocking parts run in a thread, so the event loop stays free.
        if migrate:
            await asyncio.to_thread(app.migrate)
        else:
            await asyncio.to_thread(lambda: app.store)  # connect now: a bad DSN fails start-up
        try:
            yield
        finally:
            await app.aclose()  # the async pool enqueue_async opened, then the sync one

    return span
