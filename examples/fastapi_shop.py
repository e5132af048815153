"""A FastAPI application that enqueues jobs from its handlers and mounts the dashboard at
/admin/jobs behind its own login. Tested by tests/test_fastapi_example.py.

    SHOP_DSN=sqlite:///shop.db uvicorn examples.fastapi_shop:api
    shiftwork worker examples.fastapi_shop:jobs --queue emails=10
"""

from __future__ import annotations

import os
import secrets

from fastapi import Depends, FastAPI, Header, HTTPException
from starlette.requests import Request

from shiftwork import App
from shiftwork.contrib.asgi import lifespan
from shiftwork.web.dashboard import create_dashboard

# On PostgreSQL, enqueue_async inserts on an async connection pool of its own (opened by
# the first enqueue, closed by the lifespan at shutdown).
jobs = App(os.environ.get("SHOP_DSN", "sqlite:///shop.db"),
           schema=os.environ.get("SHOP_SCHEMA", "shiftwork"))

# A stand-in for the application's real login: API keys of its staff.
STAFF_KEYS = {os.environ.get("SHOP_ADMIN_KEY", "admin-key-for-the-example"): "ada"}


@jobs.task(queue="emails", max_attempts=5)
def send_receipt(order_id: int, email: str) -> None:
    """Email the receipt of an order (the example only pretends)."""


def staff_user(key: str | None) -> str | None:
    """The staff member an API key belongs to, compared in constant time."""
    for known, user in STAFF_KEYS.items():
        if key is not None and secrets.compare_digest(key, known):
            return user
    return None


def require_staff(x_api_key: str | None = Header(default=None)) -> str:
    """FastAPI dependency: the handler runs for staff only."""
    user = staff_user(x_api_key)
    if user is None:
        raise HTTPException(status_code=401, detail="staff only")
    return user


api = FastAPI(lifespan=lifespan(jobs, migrate=True))


@api.post("/orders/{order_id}")
async def place_order(order_id: int, email: str) -> dict[str, int]:
    """Take an order; the receipt goes out from a worker, after the response."""
    job = await send_receipt.enqueue_async(order_id, email)
    return {"order": order_id, "receipt_job": job.id}


@api.get("/admin/whoami")
def whoami(user: str = Depends(require_staff)) -> dict[str, str]:
    """Which staff member is asking."""
    return {"user": user}


def dashboard_allowed(request: Request) -> bool:
    """The dashboard's gate is the application's own login: the same staff keys."""
    return staff_user(request.headers.get("x-api-key")) is not None


api.mount("/admin/jobs", create_dashboard(jobs, authenticate=dashboard_allowed))
