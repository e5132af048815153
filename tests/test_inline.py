"""The inline test mode: a job runs at enqueue, through the real storage and rules."""

from __future__ import annotations

from typing import Any

from shiftwork import App, Backoff, JobContext, JobState, PayloadError
from shiftwork.testing import enqueued, inline, job_states


def test_inline_runs_at_enqueue_with_retries_and_json(make_app: Any) -> None:
    app: App = make_app()
    seen: list[Any] = []

    @app.task(queue="emails", max_attempts=3, retry=Backoff(initial=3600, jitter=False))
    def send(ctx: JobContext, to: dict[str, Any]) -> dict[str, Any]:
        seen.append((ctx.attempt, to))
        if ctx.attempt < 3:
            raise RuntimeError("smtp down")
        return {"sent": to["id"]}

    @app.task(queue="other")
    def fail() -> None:
        raise ValueError("never works")

    with inline(app) as ran:
        result = send.enqueue({"id": 7, "tags": ("a",)})  # a tuple comes back a list
        fail.using(max_attempts=2).enqueue()
    # Retries ran at once (no sleep for the hour's backoff), each attempt as a worker's.
    assert seen == [(1, {"id": 7, "tags": ["a"]}), (2, {"id": 7, "tags": ["a"]}),
                    (3, {"id": 7, "tags": ["a"]})]
    assert (ran.succeeded, ran.retrying, ran.dead) == (1, 3, 1)
    job = app.get_job(result.id)
    assert job.state is JobState.SUCCEEDED and job.attempt == 3
    assert job.result == {"sent": 7} and len(job.errors) == 2
    assert job_states(app) == {JobState.SUCCEEDED: 1, JobState.DEAD: 1}


def test_inline_validates_and_leaves_delayed_and_outside_jobs(make_app: Any) -> None:
    app: App = make_app()
    calls: list[int] = []

    @app.task
    def count(n: int) -> None:
        calls.append(n)

    with inline(app):
        try:
            count.enqueue(object())  # type: ignore[arg-type]  # not JSON: refused at enqueue
        except PayloadError:
            pass
        else:
            raise AssertionError("a non-JSON argument was accepted")
        count.using(delay=3600).enqueue(1)  # delayed: waits, as for a worker
        count.enqueue_many([(2,), (3,)])  # the bulk path runs inline too
    count.enqueue(4)  # after the block: enqueued only
    assert calls == [2, 3]
    assert sorted(j.args[0] for j in enqueued(app, count)) == [1, 4]


def test_inline_runs_jobs_enqueued_by_jobs_and_async_tasks(make_app: Any) -> None:
    app: App = make_app()
    order: list[str] = []

    @app.task
    async def child(n: int) -> None:
        order.append(f"child {n}")

    @app.task
    def parent(n: int) -> None:
        order.append("parent")
        child.enqueue(n)

    with inline(app) as ran:
        parent.enqueue(5)
    assert order == ["parent", "child 5"] and ran.succeeded == 2
