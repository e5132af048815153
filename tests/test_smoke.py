from __future__ import annotations

from shiftwork import App, JobState

from .conftest import running_worker, wait_for


def test_enqueue_and_run(app: App) -> None:
    seen: list[int] = []

    @app.task(queue="default")
    def add(a: int, b: int) -> int:
        seen.append(a + b)
        return a + b

    job = add.enqueue(2, 3)
    with running_worker(app):
        wait_for(lambda: app.get_job(job.id).state is JobState.SUCCEEDED, what="job done")
    assert seen == [5]
    assert app.get_job(job.id).result == 5


def test_enqueue_from_asyncio(app: App) -> None:
    import asyncio

    @app.task
    def ping(n: int) -> None: ...

    async def handler() -> list[int]:
        a = await ping.enqueue_async(1)
        b = await ping.using(priority=3).enqueue_async(2)
        return [a.id, b.id]

    ids = asyncio.run(handler())
    assert [app.get_job(i).args for i in ids] == [[1], [2]]
