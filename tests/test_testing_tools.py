from __future__ import annotations

from datetime import UTC, datetime

from shiftwork import App, Backoff, FakeClock, JobState
from shiftwork.testing import drain, enqueued, job_states


def test_drain_runs_jobs_inline_and_respects_retries(make_app) -> None:  # type: ignore[no-untyped-def]
    clock = FakeClock(datetime.now(UTC))
    app: App = make_app(clock=clock)
    calls: list[int] = []

    @app.task(queue="emails", max_attempts=2, retry=Backoff(initial=60, jitter=False))
    def send(n: int) -> None:
        calls.append(n)
        if n == 3:
            raise RuntimeError("smtp down")

    @app.task(queue="other")
    async def ping() -> str:
        return "pong"

    send.enqueue_many([(1,), (2,), (3,)])
    ping.enqueue()
    assert [j.args for j in enqueued(app, send)] == [[1], [2], [3]]
    first = drain(app)
    assert (first.succeeded, first.retrying) == (3, 1)
    assert drain(app).ran == 0  # the retry waits for its backoff
    clock.advance(61)
    second = drain(app)
    assert second.dead == 1
    assert calls == [1, 2, 3, 3]
    assert job_states(app) == {JobState.SUCCEEDED: 3, JobState.DEAD: 1}
