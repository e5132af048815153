"""examples/fastapi_shop.py, with httpx against the ASGI app (through the lifespan):
handlers enqueue with enqueue_async, the dashboard answers at its prefix behind the host
application's login."""

from __future__ import annotations

import importlib.util
import re
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from shiftwork.testing import assert_enqueued, drain

pytest.importorskip("fastapi")
with warnings.catch_warnings():  # starlette 1.x prefers httpx2; httpx is what we have
    warnings.simplefilter("ignore", DeprecationWarning)
    from starlette.testclient import TestClient

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "fastapi_shop.py"
STAFF = {"x-api-key": "admin-key-for-the-example"}


@pytest.fixture
def shop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    monkeypatch.setenv("SHOP_DSN", f"sqlite:///{tmp_path / 'shop.db'}")
    spec = importlib.util.spec_from_file_location("fastapi_shop", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fastapi_shop"] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop("fastapi_shop", None)


def test_a_handler_enqueues_and_a_worker_runs_it(shop: ModuleType) -> None:
    with TestClient(shop.api) as client:  # runs the lifespan: migrate, then close
        answer = client.post("/orders/17", params={"email": "ada@example.com"})
        assert answer.status_code == 200
        job_id = answer.json()["receipt_job"]
        [job] = assert_enqueued(shop.send_receipt, args=[17, "ada@example.com"])
        assert job.id == job_id
        assert client.post("/orders/x", params={"email": "a"}).status_code == 422
        assert drain(shop.jobs).succeeded == 1


def test_handlers_enqueue_on_the_async_pool_on_postgres(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """On PostgreSQL, with httpx against the ASGI app: the handler's enqueue_async goes
    through the async pool (the sync insert is made to fail), which the lifespan closes."""
    import asyncio
    import uuid

    import httpx
    import psycopg

    from .conftest import PG_DSN, require_pg

    require_pg()
    schema = f"t_{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv("SHOP_DSN", PG_DSN)
    monkeypatch.setenv("SHOP_SCHEMA", schema)
    spec = importlib.util.spec_from_file_location("fastapi_shop_pg", EXAMPLE)
    assert spec is not None and spec.loader is not None
    shop = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shop)

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("enqueue_async hopped onto the sync pool")

    async def main() -> None:
        async with shop.api.router.lifespan_context(shop.api):  # migrate ... aclose
            shop.jobs.store.jobs.insert = refuse
            transport = httpx.ASGITransport(app=shop.api)
            async with httpx.AsyncClient(transport=transport, base_url="http://shop") as client:
                answers = await asyncio.gather(*(
                    client.post(f"/orders/{n}", params={"email": f"{n}@example.com"})
                    for n in range(8)))
            assert {a.status_code for a in answers} == {200}
            assert shop.jobs.store.async_pool_open
        assert not shop.jobs.store.async_pool_open  # closed by the lifespan

    try:
        asyncio.run(main())
        del shop.jobs.store.jobs.insert
        assert sorted(j.args[0] for j in shop.jobs.list_jobs()) == list(range(8))
    finally:
        shop.jobs.close()
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_the_dashboard_is_mounted_behind_the_hosts_login(shop: ModuleType) -> None:
    with TestClient(shop.api, base_url="http://127.0.0.1") as client:
        assert client.get("/admin/whoami").status_code == 401
        assert client.get("/admin/whoami", headers=STAFF).json() == {"user": "ada"}
        assert client.get("/admin/jobs/").status_code == 401
        assert client.get("/admin/jobs/", headers={"x-api-key": "wrong"}).status_code == 401
        page = client.get("/admin/jobs/", headers=STAFF)
        assert page.status_code == 200 and "Overview" in page.text
        assert client.get("/admin/jobs/jobs", headers=STAFF).status_code == 200


def test_the_mounted_dashboards_links_keep_its_prefix(shop: ModuleType) -> None:
    with TestClient(shop.api, base_url="http://127.0.0.1") as client:
        page = client.get("/admin/jobs/", headers=STAFF)
        links = re.findall(r'(?:href|src|action)="(/[^"]*)"', page.text)
        assert links and all(link.startswith("/admin/jobs/") for link in links), links
