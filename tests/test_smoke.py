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
