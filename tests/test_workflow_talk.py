"""Talking to a running workflow: published state (queries) and updates, both engines."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from shiftwork import App, FakeClock, JobState, PayloadError, Workflow
from shiftwork.core.errors import JobNotFoundError, PayloadTooLargeError
from shiftwork.testing import drain
from shiftwork.workflow import EventTimeout, UpdateRejected, UpdateTimeout, WorkflowError

from .conftest import FAST, wait_for


def _cart(app: App, seen: list[Any]) -> Any:
    @app.workflow
    def cart(wf: Workflow, owner: str) -> dict[str, Any]:
        items: list[str] = []
        wf.set_state("progress", {"items": items, "stage": "open"})

        def add(payload: dict[str, Any]) -> list[str]:
            seen.append(payload)
            if not payload.get("item"):
                raise ValueError("an item needs a name")
            return [*items, payload["item"]]

        for i in range(2):
            items = wf.wait_for_update("add", add, step=f"add-{i}")
            wf.set_state("progress", {"items": items, "stage": "open"})
        wf.set_state("progress", {"items": items, "stage": "closed"})
        return {"owner": owner, "items": items}
    return cart


def _update_in_thread(call: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = call()
        except BaseException as exc:  # handed to the test
            box["error"] = exc
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, box


def _pending(app: App, job_id: int, n: int = 1) -> bool:
    return sum(u.status == "pending" for u in app.workflows.updates(job_id)) >= n


def test_state_is_read_from_another_app_without_running_code(
        wapp: App, make_app: Callable[..., App]) -> None:
    seen: list[Any] = []
    job = _cart(wapp, seen).enqueue("ann")
    drain(wapp)
    other = make_app()  # another App on the same database: no workflow registered there
    assert other.workflows.state(job.id) == {"progress": {"items": [], "stage": "open"}}
    assert other.job(job.id).query("progress") == {"items": [], "stage": "open"}
    assert other.job(job.id).query("missing", "none") == "none"
    assert other.job(job.id).state() == other.workflows.state(job.id)
    with pytest.raises(JobNotFoundError):
        other.workflows.state(999_999)


def test_an_update_accepted_and_one_rejected(wapp: App) -> None:
    seen: list[Any] = []
    job = _cart(wapp, seen).enqueue("bob")
    drain(wapp)
    t, box = _update_in_thread(lambda: job.update("add", {"item": "tea"}, timeout=20))
    wait_for(lambda: _pending(wapp, job.id))
    drain(wapp)
    t.join(20)
    assert box == {"result": ["tea"]}
    assert wapp.workflows.query(job.id, "progress") == {"items": ["tea"], "stage": "open"}
    # rejected: the caller gets the handler's error; the workflow goes on waiting
    t, box = _update_in_thread(lambda: job.update("add", {"item": ""}, timeout=20))
    wait_for(lambda: _pending(wapp, job.id))
    drain(wapp)
    t.join(20)
    err = box["error"]
    assert isinstance(err, UpdateRejected)
    assert (err.type, err.message) == ("ValueError", "an item needs a name")
    assert "rejected update 'add'" in str(err)
    assert wapp.get_job(job.id).state is JobState.SCHEDULED  # still waiting for add-1
    t, box = _update_in_thread(lambda: job.update("add", {"item": "jam"}, timeout=20))
    wait_for(lambda: _pending(wapp, job.id))
    drain(wapp)
    t.join(20)
    assert box == {"result": ["tea", "jam"]}
    final = wapp.get_job(job.id)
    assert final.state is JobState.SUCCEEDED
    assert final.result == {"owner": "bob", "items": ["tea", "jam"]}
    assert wapp.workflows.state(job.id) == {"progress": {"items": ["tea", "jam"],
                                                         "stage": "closed"}}
    # each handler ran once per update; replays read the recorded results
    assert seen == [{"item": "tea"}, {"item": ""}, {"item": "jam"}]
    updates = wapp.workflows.updates(job.id)
    assert [(u.status, u.step) for u in reversed(updates)] == [
        ("accepted", "add-0"), ("rejected", None), ("accepted", "add-1")]
    history = [(s.name, s.kind) for s in wapp.workflow_history(job.id)]
    assert history == [("add-0", "update"), ("add-1", "update")]


def test_an_update_sent_before_the_workflow_waits_is_handled_at_its_wait(wapp: App) -> None:
    seen: list[Any] = []
    job = _cart(wapp, seen).enqueue("cy")  # not run yet
    update_id = wapp.workflows.send_update(job.id, "add", {"item": "early"})
    drain(wapp)
    [u] = wapp.workflows.updates(job.id)
    assert (u.id, u.status, u.result) == (update_id, "accepted", ["early"])


def test_a_held_workflow_takes_updates_and_handles_them_once_released(wapp: App) -> None:
    seen: list[Any] = []
    job = _cart(wapp, seen).enqueue("hd")
    wapp.hold(job.id)
    update_id = wapp.workflows.send_update(job.id, "add", {"item": "while held"})
    drain(wapp)
    assert wapp.get_job(job.id).state is JobState.HELD and seen == []
    wapp.release(job.id)
    drain(wapp)
    [u] = wapp.workflows.updates(job.id)
    assert (u.id, u.status, u.result) == (update_id, "accepted", ["while held"])


def test_replay_neither_repeats_nor_moves_the_state_back(wapp: App, clock: FakeClock) -> None:
    writes: list[int] = []

    @wapp.workflow
    def counter(wf: Workflow) -> int:
        for i in range(3):
            wf.set_state("n", i)
            writes.append(i)
            wf.sleep(f"nap-{i}", 10)
        return 3

    job = counter.enqueue()
    for _ in range(4):
        drain(wapp)
        clock.advance(11)
    assert wapp.get_job(job.id).state is JobState.SUCCEEDED
    assert writes == [0, 0, 1, 0, 1, 2, 0, 1, 2]  # the body replays from the top...
    assert wapp.workflows.query(job.id, "n") == 2  # ...and the state never went back
    rows = wapp.store.workflows.state_get(job.id)
    assert rows == {"n": 2}


def test_the_caller_times_out_with_a_clear_error(wapp: App) -> None:
    job = _cart(wapp, []).enqueue("dee")
    drain(wapp)
    with pytest.raises(UpdateTimeout) as got:
        job.update("add", {"item": "x"}, timeout=0.2)
    assert isinstance(got.value, TimeoutError)
    assert "got no result within 0.2 seconds" in str(got.value)
    # the request stays delivered: the workflow handles it at its next run
    drain(wapp)
    [u] = wapp.workflows.updates(job.id)
    assert (u.id, u.status, u.result) == (got.value.update_id, "accepted", ["x"])


def test_async_caller_and_async_body(wapp: App) -> None:
    @wapp.workflow
    async def greeter(wf: Any) -> str:
        await wf.set_state("stage", "ready")

        async def hello(payload: str) -> str:
            return f"hello {payload}"
        return str(await wf.wait_for_update("hello", hello))

    job = greeter.enqueue()
    drain(wapp)
    assert job.query("stage") == "ready"

    async def main() -> Any:
        call = asyncio.create_task(job.update_async("hello", "ann", timeout=20))
        await asyncio.to_thread(wait_for, lambda: _pending(wapp, job.id))
        await asyncio.to_thread(drain, wapp)
        return await call
    assert asyncio.run(main()) == "hello ann"
    assert wapp.get_job(job.id).result == "hello ann"


def test_a_workflow_side_timeout_and_a_finished_workflow(wapp: App, clock: FakeClock) -> None:
    @wapp.workflow
    def impatient(wf: Workflow) -> str:
        try:
            wf.wait_for_update("go", timeout=60)
        except EventTimeout:
            return "gave up"
        return "went"

    job = impatient.enqueue()
    drain(wapp)
    clock.advance(61)
    drain(wapp)
    assert wapp.get_job(job.id).result == "gave up"
    with pytest.raises(Exception, match="not active"):
        job.update("go", timeout=1)


def test_bad_input_is_refused_with_a_clear_error(make_app: Callable[..., App],
                                                 clock: FakeClock) -> None:
    app = make_app(clock=clock, settings=replace(FAST, max_workflow_state_bytes=100))

    @app.task
    def plain() -> None:
        pass

    @app.workflow
    def big(wf: Workflow) -> None:
        wf.set_state("blob", "x" * 500)

    task_job = plain.enqueue()
    with pytest.raises(WorkflowError, match="not a workflow"):
        task_job.update("x", timeout=1)
    with pytest.raises(PayloadError):
        app.workflows.send_update(task_job.id, "x", {1, 2})
    with pytest.raises(WorkflowError, match="timeout"):
        task_job.update("x", timeout=-1)
    with pytest.raises(WorkflowError, match="limit"):
        app.workflows.updates(task_job.id, limit=0)
    job = big.enqueue()
    drain(app)
    failed = app.get_job(job.id)
    assert "max_workflow_state_bytes" in str(failed.errors[-1]["message"])
    assert PayloadTooLargeError.__name__ in failed.errors[-1]["type"]


def test_state_and_updates_are_pruned_with_the_workflow(wapp: App, clock: FakeClock) -> None:
    job = _cart(wapp, []).enqueue("eve")
    drain(wapp)
    for item in ("a", "b"):
        wapp.workflows.send_update(job.id, "add", {"item": item})
    drain(wapp)
    assert wapp.get_job(job.id).state is JobState.SUCCEEDED
    assert wapp.workflows.updates(job.id) and wapp.store.workflows.state_get(job.id)
    clock.advance(wapp.runtime.settings.retention_finished + 10)
    assert wapp.store.jobs.prune(wapp.runtime.settings.retention_finished,
                                 wapp.runtime.settings.retention_dead) >= 1
    assert wapp.workflows.updates(job.id) == []
    assert wapp.store.workflows.state_get(job.id) == {}


def test_the_dashboard_shows_state_and_updates_escaped(wapp: App) -> None:
    from shiftwork.web import create_dashboard

    from .test_security import TOKEN, Served, login

    hostile = "<script>alert(1)</script>"

    @wapp.workflow
    def shown(wf: Workflow) -> None:
        wf.set_state(hostile, {"note": hostile})

        def refuse(payload: Any) -> None:
            raise ValueError(hostile)
        wf.wait_for_update("poke", refuse)

    job = shown.enqueue()
    drain(wapp)
    wapp.workflows.send_update(job.id, "poke", {"p": hostile})
    drain(wapp)
    with Served(create_dashboard(wapp, token=TOKEN)) as served, served.client() as c:
        login(c)
        page = c.get(f"/workflows/{job.id}").text
    assert hostile not in page
    state = page.split('id="state"')[1].split("</table>")[0]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in state
    updates = page.split('id="updates"')[1].split("</table>")[0]
    assert "poke" in updates and "rejected" in updates and "ValueError" in updates
    assert "an update (update:poke)" in page


def test_the_command_line_reads_state_and_sends_updates(app: App,
                                                        db: dict[str, str]) -> None:
    """On the system clock: the command's App wakes the workflow at its own now."""
    import json

    from click.testing import CliRunner

    from shiftwork.cli.root import main

    job = _cart(app, []).enqueue("fay")
    drain(app)
    where = ["--dsn", db["dsn"], "--schema", db["schema"]]
    shown = CliRunner().invoke(main, ["workflows", "state", str(job.id), *where])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout) == {"progress": {"items": [], "stage": "open"}}
    t, box = _update_in_thread(lambda: CliRunner().invoke(main, [
        "workflows", "update", str(job.id), "add", "--payload", '{"item": "tea"}',
        "--timeout", "20", *where]))
    wait_for(lambda: _pending(app, job.id))
    drain(app)
    t.join(20)
    assert box["result"].exit_code == 0, box["result"].output
    assert json.loads(box["result"].stdout) == ["tea"]
    t, box = _update_in_thread(lambda: CliRunner().invoke(main, [
        "workflows", "update", str(job.id), "add", "--payload", '{"item": ""}', *where]))
    wait_for(lambda: _pending(app, job.id))
    drain(app)
    t.join(20)
    assert box["result"].exit_code == 2
    assert "rejected update 'add'" in box["result"].output
    bad = CliRunner().invoke(main, ["workflows", "update", str(job.id), "add",
                                    "--payload", "{nope", *where])
    assert bad.exit_code == 2 and "--payload must be JSON" in bad.output
