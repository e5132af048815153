"""Fork and continue-as-new (issue 32): new runs made from a workflow's record."""

from __future__ import annotations

from typing import Any

import pytest

from shiftwork import App, FakeClock, JobState, Workflow
from shiftwork.core.errors import JobNotFoundError
from shiftwork.testing import drain
from shiftwork.workflow import WorkflowError

from .test_workflow_streams import sql


def _count(app: App, table: str, job_id: int) -> int:
    with app.store.transaction() as c:
        return int(c.execute(sql(app, f"SELECT count(*) FROM {{s}}{table} WHERE job_id = ?"),
                             (job_id,)).fetchone()[0])


# -- fork ---------------------------------------------------------------------------


def _saga(app: App, calls: list[str], broken: dict[str, bool]) -> Any:
    def charge(order: int) -> str:
        calls.append("charge")
        return f"ch_{order}"

    def ship(order: int) -> str:
        calls.append("ship")
        if broken["ship"]:
            raise RuntimeError("carrier down")
        return f"sh_{order}"

    @app.workflow(max_attempts=1)
    def order(wf: Workflow, n: int) -> dict[str, str]:
        c = wf.step("charge", charge, n)
        wf.write_stream("log", f"charged {c}")
        s = wf.step("ship", ship, n, max_attempts=1)  # a failure is recorded
        wf.write_stream("log", f"shipped {s}")
        return {"charge": c, "ship": s}

    return order


def test_fork_keeps_the_steps_before_and_runs_the_rest(wapp: App) -> None:
    calls: list[str] = []
    broken = {"ship": True}
    order = _saga(wapp, calls, broken)
    job = order.enqueue(7)
    drain(wapp)
    assert wapp.get_job(job.id).state is JobState.DEAD and calls == ["charge", "ship"]
    before = [(s.name, s.status) for s in wapp.workflow_history(job.id)]

    broken["ship"] = False  # the bug is fixed: run the failed part again
    fork = wapp.workflows.fork(job.id, from_step="ship")
    assert fork.id != job.id
    drain(wapp)
    got = wapp.get_job(fork.id)
    assert got.state is JobState.SUCCEEDED, got.errors
    assert got.result == {"charge": "ch_7", "ship": "sh_7"}
    assert calls == ["charge", "ship", "ship"]  # charge was not run again
    assert got.meta["forked_from"] == {"id": job.id, "step": "ship", "position": 2}
    # the fork's stream holds the copied value, then its own
    assert list(fork.read_stream("log")) == ["charged ch_7", "shipped sh_7"]
    # the original is untouched
    assert wapp.get_job(job.id).state is JobState.DEAD
    assert [(s.name, s.status) for s in wapp.workflow_history(job.id)] == before
    assert list(wapp.workflows.read_stream(job.id, "log")) == ["charged ch_7"]
    assert wapp.get_workflow(fork.id).status == "succeeded"


def test_fork_from_where_an_unrecorded_failure_stopped(wapp: App) -> None:
    calls: list[str] = []
    broken = {"pay": True}

    def pay() -> str:
        calls.append("pay")
        if broken["pay"]:
            raise RuntimeError("declined")
        return "paid"

    @wapp.workflow(max_attempts=1)
    def checkout(wf: Workflow) -> str:
        wf.step("cart", lambda: calls.append("cart"))
        return str(wf.step("pay", pay))  # no step retry: the failure is not recorded

    job = checkout.enqueue()
    drain(wapp)
    with pytest.raises(WorkflowError, match="or position 1, the first without a record"):
        wapp.workflows.fork(job.id, from_step="pay")
    broken["pay"] = False
    fork = wapp.workflows.fork(job.id, from_step=1)
    drain(wapp)
    assert wapp.get_job(fork.id).result == "paid"
    assert calls == ["cart", "pay", "pay"]
    assert wapp.get_job(fork.id).meta["forked_from"] == {"id": job.id, "step": None,
                                                          "position": 1}


def test_fork_by_position_and_from_the_start(wapp: App) -> None:
    calls: list[str] = []
    order = _saga(wapp, calls, {"ship": False})
    job = order.enqueue(1)
    drain(wapp)
    first = wapp.workflows.fork(job.id, from_step=0)  # everything again
    second = wapp.workflows.fork(job.id, from_step=3)  # only the last stream write
    drain(wapp)
    assert calls == ["charge", "ship", "charge", "ship"]
    assert wapp.get_job(first.id).result == wapp.get_job(second.id).result
    assert _count(wapp, "workflow_streams", second.id) == 2


def test_fork_refuses_what_it_cannot_fork(wapp: App) -> None:
    order = _saga(wapp, [], {"ship": False})

    @wapp.task
    def plain() -> None:
        pass

    job = order.enqueue(1)
    with pytest.raises(WorkflowError, match="has not begun a run"):
        wapp.workflows.fork(job.id, from_step="ship")
    drain(wapp)
    with pytest.raises(WorkflowError, match=r"no recorded step 'shipp' \(its steps: 'charge'"):
        wapp.workflows.fork(job.id, from_step="shipp")
    with pytest.raises(WorkflowError, match=r"no recorded step 9 .*or position 4"):
        wapp.workflows.fork(job.id, from_step=9)
    with pytest.raises(WorkflowError, match="step name or position"):
        wapp.workflows.fork(job.id, from_step=1.5)  # type: ignore[arg-type]
    other = plain.enqueue()
    with pytest.raises(WorkflowError, match="not register as a workflow"):
        wapp.workflows.fork(other.id, from_step=0)
    with pytest.raises(JobNotFoundError):
        wapp.workflows.fork(10**9, from_step=0)
    assert len(wapp.store.jobs.list(limit=100)) == 2  # nothing was made


def test_a_fork_of_a_workflow_with_a_child_keeps_the_childs_result(wapp: App) -> None:
    runs: list[str] = []

    @wapp.workflow
    def kid(wf: Workflow) -> str:
        runs.append("kid")
        return "k"

    @wapp.workflow
    def parent(wf: Workflow) -> list[str]:
        a = wf.child(kid)
        b = wf.step("after", lambda: "b")
        return [a, b]

    job = parent.enqueue()
    drain(wapp)
    fork = wapp.workflows.fork(job.id, from_step="after")
    drain(wapp)
    assert wapp.get_job(fork.id).result == ["k", "b"]
    assert runs == ["kid"]  # the child's recorded result was kept, not run again


# -- continue-as-new -----------------------------------------------------------------


def test_a_loop_continued_as_new_keeps_its_history_bounded(wapp: App) -> None:
    most = {"steps": 0}

    @wapp.workflow
    def counter(wf: Workflow, i: int, total: int) -> int:
        n = wf.step(f"add-{i}", lambda: i + 1)
        wf.sleep("pause", 0)
        if n >= total:
            return n
        # the history at its longest, right before the reset
        most["steps"] = max(most["steps"], _count(wapp, "workflow_steps", wf.id))
        wf.continue_as_new(n, total)

    job = counter.enqueue(0, 200)
    drain(wapp)
    got = wapp.get_job(job.id)
    assert got.state is JobState.SUCCEEDED and got.result == 200
    assert wapp.workflows.generation(job.id) == 199
    assert most["steps"] == 2  # a run holds its own records only, never 200 iterations'
    assert _count(wapp, "workflow_steps", job.id) == 2
    assert got.counted_attempt == 1  # each hand-over is not an attempt


def test_continue_as_new_keeps_pending_events_and_streams(wapp: App, clock: FakeClock) -> None:
    @wapp.workflow
    def inbox(wf: Workflow, seen: list[Any]) -> list[Any]:
        got = wf.wait_for_event("msg")
        wf.write_stream("seen", got)
        seen = [*seen, got]
        if len(seen) == 3:
            wf.close_stream("seen")
            return seen
        wf.continue_as_new(seen)

    job = inbox.enqueue([])
    for i in range(3):
        wapp.send_event(job.id, "msg", i)  # all three before the first run: kept across
    drain(wapp)
    assert wapp.get_job(job.id).result == [0, 1, 2]
    assert list(job.read_stream("seen")) == [0, 1, 2]
    assert _count(wapp, "workflow_events", job.id) == 1  # the last run's; the others went


def test_continue_as_new_checks_its_arguments(wapp: App) -> None:
    @wapp.workflow(max_attempts=1)
    def loop(wf: Workflow, i: int) -> None:
        wf.continue_as_new(i, "extra")  # one argument too many

    job = loop.enqueue(1)
    drain(wapp)
    got = wapp.get_job(job.id)
    assert got.state is JobState.DEAD
    assert wapp.workflows.generation(job.id) == 0
    assert got.args == [1]


def test_a_fork_never_joins_a_job_holding_the_unique_key(wapp: App, clock: FakeClock) -> None:
    @wapp.workflow(unique=True)
    def once_per_user(wf: Workflow, user: int) -> None:
        wf.step("a", lambda: 1)
        wf.sleep("nap", 60)  # still active: its unique key is held

    job = once_per_user.enqueue(1)
    drain(wapp)
    with pytest.raises(WorkflowError, match="holds the unique key"):
        wapp.workflows.fork(job.id, from_step="a")
    assert [s.name for s in wapp.workflow_history(job.id)] == ["a", "nap"]  # untouched
    assert len(wapp.store.jobs.list(limit=10)) == 1


def test_the_fork_command(db: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import subprocess
    import sys

    from .conftest import ROOT, imported_app

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}",
               "SHIFTWORK_TEST_DSN": db["dsn"], "SHIFTWORK_TEST_SCHEMA": db["schema"],
               "SHIFTWORK_APP": "tests.apps.streaming:app", "COLUMNS": "200"}
        return subprocess.run([sys.executable, "-m", "shiftwork.cli", *args],
                              capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)

    with imported_app(monkeypatch, "streaming", db["dsn"], db["schema"]) as module:
        module.create_effects_table()
        job = module.pipeline.enqueue("p")
        drain(module.app)
        by_name = cli("workflows", "fork", str(job.id), "--from-step", "load")
        assert by_name.returncode == 0, by_name.stderr
        new_id = int(by_name.stdout.split("new workflow ")[1])
        by_position = cli("workflows", "fork", str(job.id), "--from-step", "1")
        assert by_position.returncode == 0, by_position.stderr
        bad = cli("workflows", "fork", str(job.id), "--from-step", "nope")
        assert bad.returncode == 2 and "no recorded step 'nope'" in bad.stderr
        drain(module.app)
        assert module.app.get_job(new_id).result == ["p", "extract", "transform", "load"]
        assert module.effects(new_id) == ["load"]
