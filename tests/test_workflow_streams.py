"""Workflow streams (issue 32): wf.write_stream / close_stream, handle.read_stream."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from shiftwork import App, FakeClock, JobState, Workflow
from shiftwork.core.errors import ConfigurationError, JobNotFoundError
from shiftwork.testing import drain

from .conftest import FAST, running_worker, wait_for


def sql(app: App, text: str) -> str:
    """``text`` for the app's engine: its schema, its placeholder."""
    if app.store.engine == "postgres":
        schema = app.store.schema  # type: ignore[attr-defined]
        return text.replace("{s}", f'"{schema}".').replace("?", "%s")
    return text.replace("{s}", "")


def _rows(app: App, job_id: int) -> int:
    with app.store.transaction() as c:
        return int(c.execute(sql(app, "SELECT count(*) FROM {s}workflow_streams "
                                      "WHERE job_id = ?"), (job_id,)).fetchone()[0])


def test_values_are_written_once_across_replays(wapp: App, clock: FakeClock) -> None:
    @wapp.workflow
    def progress(wf: Workflow, n: int) -> str:
        for i in range(n):
            wf.write_stream("progress", {"i": i})
            if i == 1:
                wf.sleep("nap", 60)  # the run ends here; the next replays the two writes
        wf.close_stream("progress")
        return "done"

    job = progress.enqueue(4)
    drain(wapp)
    early = job.read_stream("progress", timeout=0.2)
    assert [next(early), next(early)] == [{"i": 0}, {"i": 1}]
    with pytest.raises(TimeoutError, match="no value within"):
        next(early)  # asleep: no third value yet
    clock.advance(61)
    drain(wapp)
    assert wapp.get_job(job.id).state is JobState.SUCCEEDED
    assert list(job.read_stream("progress")) == [{"i": i} for i in range(4)]
    assert list(job.read_stream("progress", offset=2)) == [{"i": 2}, {"i": 3}]
    assert list(job.read_stream("progress", offset=9)) == []
    assert _rows(wapp, job.id) == 5  # four values and the close, none written twice
    assert [(k.key, k.values, k.closed) for k in wapp.workflows.streams(job.id)] == [
        ("progress", 4, True)]
    kinds = [s.kind for s in wapp.workflow_history(job.id)]
    assert kinds.count("stream") == 5


def test_a_reader_sees_values_as_they_arrive(make_app: Callable[..., App]) -> None:
    app = make_app()

    @app.workflow
    def chatty(wf: Workflow) -> None:
        wf.write_stream("out", "first")
        wf.wait_for_event("more")
        wf.write_stream("out", "second")
        wf.wait_for_event("end")  # ends without closing: the reader ends with it

    job = chatty.enqueue()
    got: list[Any] = []
    with running_worker(app):
        reader = threading.Thread(target=lambda: got.extend(job.read_stream("out", timeout=30)))
        reader.start()
        wait_for(lambda: got == ["first"], what="the first value")
        app.send_event(job.id, "more")
        wait_for(lambda: got == ["first", "second"], what="the second value")
        assert reader.is_alive()  # the stream is open and the workflow runs
        app.send_event(job.id, "end")
        reader.join(30)
        assert not reader.is_alive()
    assert got == ["first", "second"]
    assert app.get_job(job.id).state is JobState.SUCCEEDED


def test_a_stream_is_bounded(make_app: Callable[..., App], clock: FakeClock) -> None:
    app = make_app(clock=clock, settings=replace(FAST, max_stream_values=2,
                                                 max_stream_value_bytes=100))

    @app.workflow(max_attempts=1)
    def many(wf: Workflow) -> None:
        for i in range(3):
            wf.write_stream("s", i)

    @app.workflow(max_attempts=1)
    def big(wf: Workflow) -> None:
        wf.write_stream("s", "x" * 200)

    @app.workflow(max_attempts=1)
    def after_close(wf: Workflow) -> None:
        wf.close_stream("s")
        wf.write_stream("s", 1)

    jobs = [many.enqueue(), big.enqueue(), after_close.enqueue()]
    drain(app)
    errors = [app.get_job(j.id).errors[-1]["message"] for j in jobs]
    assert all(app.get_job(j.id).state is JobState.DEAD for j in jobs)
    assert "holds 2 values, the most settings.max_stream_values allows" in errors[0]
    assert "max_stream_value_bytes" in errors[1]
    assert "is closed" in errors[2]
    assert list(jobs[0].read_stream("s")) == [0, 1]


def test_bad_keys_and_reads_are_refused(wapp: App) -> None:
    @wapp.workflow(max_attempts=1)
    def bad(wf: Workflow) -> None:
        wf.write_stream("", 1)

    job = bad.enqueue()
    drain(wapp)
    assert "stream key" in wapp.get_job(job.id).errors[-1]["message"]
    with pytest.raises(ConfigurationError, match="offset"):
        job.read_stream("s", offset=-1)
    with pytest.raises(ConfigurationError, match="key"):
        job.read_stream("")
    with pytest.raises(JobNotFoundError):
        list(wapp.workflows.read_stream(10**9, "s"))


def test_streams_are_deleted_with_their_workflow(wapp: App) -> None:
    @wapp.workflow
    def one(wf: Workflow) -> None:
        wf.write_stream("s", 1)

    job = one.enqueue()
    drain(wapp)
    assert _rows(wapp, job.id) == 1
    with wapp.store.transaction() as c:
        c.execute(sql(wapp, "DELETE FROM {s}jobs WHERE id = ?"), (job.id,))
    assert _rows(wapp, job.id) == 0


def test_replay_checks_a_stream_write(wapp: App, clock: FakeClock) -> None:
    shape = {"value": 1}

    @wapp.workflow(max_attempts=1)
    def w(wf: Workflow) -> None:
        wf.write_stream("s", shape["value"])
        wf.sleep("nap", 10)

    job = w.enqueue()
    drain(wapp)
    shape["value"] = 2  # the code now writes something else at that place
    clock.advance(11)
    drain(wapp)
    got = wapp.get_job(job.id)
    assert got.state is JobState.DEAD
    assert "non-deterministic" in got.errors[-1]["message"]


def test_an_async_workflow_streams_and_continues(wapp: App) -> None:
    from shiftwork.workflow import AsyncWorkflow

    @wapp.workflow
    async def ticker(wf: AsyncWorkflow, i: int) -> int:
        await wf.write_stream("ticks", i)
        if i == 2:
            await wf.close_stream("ticks")
            return i
        await wf.continue_as_new(i + 1)
        raise AssertionError("continue_as_new returned")

    job = ticker.enqueue(0)
    drain(wapp)
    assert wapp.get_job(job.id).result == 2
    assert list(job.read_stream("ticks")) == [0, 1, 2]  # kept across the runs
    assert wapp.workflows.generation(job.id) == 2


def test_read_a_stream_from_asyncio(wapp: App) -> None:
    import asyncio

    @wapp.workflow
    def three(wf: Workflow) -> None:
        for i in range(3):
            wf.write_stream("s", i)

    job = three.enqueue()
    drain(wapp)

    async def read() -> list[Any]:
        return [v async for v in job.read_stream_async("s", offset=1)]

    assert asyncio.run(read()) == [1, 2]
