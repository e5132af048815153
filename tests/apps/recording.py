"""A test app whose tasks record every execution (job, attempt, pid) in the same database.

Used by the chaos tests, which run it in real worker processes and kill them.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from shiftwork import App, Backoff, JobContext, Settings, Workflow
from shiftwork.workflow import set_boundary_hook
from tests.apps.side_db import SideConnection

DSN = os.environ["SHIFTWORK_TEST_DSN"]
SCHEMA = os.environ.get("SHIFTWORK_TEST_SCHEMA", "shiftwork")
HEARTBEAT = float(os.environ.get("SHIFTWORK_TEST_HEARTBEAT", "0.5"))

app = App(DSN, schema=SCHEMA, settings=Settings(
    heartbeat_interval=HEARTBEAT, lease_seconds=HEARTBEAT * 3, rescue_interval=HEARTBEAT / 2,
    poll_interval=0.2, leader_ttl=3.0,
    outage_log_every=float(os.environ.get("SHIFTWORK_TEST_OUTAGE_LOG_EVERY", "30"))))

_side = SideConnection(DSN)


def _conn() -> Any:
    return _side.get()


def effects_table() -> str:
    return "effects" if DSN.startswith("sqlite") else f'"{SCHEMA}".effects'


def create_effects_table() -> None:
    _conn().execute(f"CREATE TABLE IF NOT EXISTS {effects_table()} "
                    "(job_id bigint, attempt int, pid int, phase text)")


def record(job_id: int, attempt: int, phase: str) -> None:
    mark = "?" if DSN.startswith("sqlite") else "%s"
    _conn().execute(f"INSERT INTO {effects_table()} VALUES ({mark}, {mark}, {mark}, {mark})",
                    (job_id, attempt, os.getpid(), phase))


@app.task(queue="work", max_attempts=10, retry=Backoff(initial=0.05, maximum=0.2))
def work(ctx: JobContext, n: int, seconds: float = 0.0) -> int:
    record(ctx.job_id, ctx.attempt, "start")
    if seconds:
        time.sleep(seconds)
    return n


@app.task(queue="work", max_attempts=10, retry=Backoff(initial=0.05, maximum=0.2))
def slow(ctx: JobContext, seconds: float) -> None:
    record(ctx.job_id, ctx.attempt, "start")
    time.sleep(seconds)
    record(ctx.job_id, ctx.attempt, "done")


@app.task(queue="hard", max_attempts=1, timeout=0.5)
def stuck_in_c(seconds: float) -> None:
    time.sleep(seconds)  # blocked in C: only killing the process stops it


@app.task(queue="hard", max_attempts=2)
def in_child(ctx: JobContext, n: int) -> dict[str, int]:
    if n < 0:
        raise ValueError("negative")
    ctx.processed(n)  # counted in the child, reported to the parent with the result
    return {"pid": os.getpid(), "n": n, "attempt": ctx.attempt}


def _effect(wf: Workflow, phase: str, seconds: float = 0.0) -> str:
    record(wf.id, wf.ctx.attempt, phase)
    if seconds and not os.environ.get("SHIFTWORK_TEST_FAST_STEPS"):
        time.sleep(seconds)
    return phase


@app.workflow(queue="work", max_attempts=10, retry=Backoff(initial=0.05, maximum=0.2))
def pipeline(wf: Workflow, seconds: float) -> list[str]:
    one = wf.step("one", _effect, wf, "one")
    two = wf.step("two", _effect, wf, "two", seconds)
    wf.sleep("pause", 0.2)
    three = wf.step("three", _effect, wf, "three")
    return [one, two, three]


@app.task(queue="freeze", max_attempts=5, retry=Backoff(initial=0.05, maximum=0.2))
def freeze_in_write(ctx: JobContext, n: int) -> int:
    """SQLite only. Stops its own process (SIGSTOP) inside a write transaction on the first
    attempt: the write lock stays held until someone sends SIGCONT."""
    record(ctx.job_id, ctx.attempt, "start")
    with ctx.transaction() as tx:
        tx.execute(f"INSERT INTO {effects_table()} VALUES (?, ?, ?, 'in-tx')",
                   (ctx.job_id, ctx.attempt, os.getpid()))
        tx.checkpoint({"n": n})
        if ctx.attempt == 1:
            os.kill(os.getpid(), signal.SIGSTOP)
    record(ctx.job_id, ctx.attempt, "done")
    return n


# -- the saga of the crash-point tests (tests/test_workflow_chaos.py) -----------------------

#: workflow id -> the boundary label at which its worker process must die (once)
_CRASH_AT: dict[int, str] = {}


def _crash_hook(workflow_id: int, label: str) -> None:
    if _CRASH_AT.get(workflow_id) != label:
        return
    phase = f"crash:{label}"
    mark = "?" if DSN.startswith("sqlite") else "%s"
    done = _conn().execute(f"SELECT 1 FROM {effects_table()} WHERE job_id = {mark} "
                           f"AND phase = {mark}", (workflow_id, phase)).fetchone()
    if done is None:
        record(workflow_id, 0, phase)
        if os.environ.get("SHIFTWORK_TEST_SIGKILL"):
            os.kill(os.getpid(), signal.SIGKILL)  # killed from outside, as the OOM killer does
        os._exit(17)  # a real crash: no cleanup, no hand-back, the lease just runs out


if os.environ.get("SHIFTWORK_TEST_CRASHES"):
    set_boundary_hook(_crash_hook)


def _fail(wf: Workflow, phase: str) -> None:
    record(wf.id, wf.ctx.attempt, phase)
    raise ValueError(f"step {phase} cannot succeed")


def _undo(wf: Workflow, phase: str) -> Any:
    return lambda result: record(wf.id, wf.ctx.attempt, phase)


def _saga(wf: Workflow, crash_at: str, fail: bool = True) -> str:
    _CRASH_AT[wf.id] = crash_at
    wf.step("a", _effect, wf, "a", compensate=_undo(wf, "undo-a"))
    wf.sleep("nap", 0.05)
    wf.step("b", _effect, wf, "b", compensate=_undo(wf, "undo-b"))
    wf.wait_for_event("go")
    wf.step("c", _fail if fail else _effect, wf, "c", compensate=_undo(wf, "undo-c"))
    return "done"


_SAGA_RETRY = Backoff(initial=0.05, maximum=0.2, non_retryable=(ValueError,))
saga = app.workflow(name="saga", queue="saga", max_attempts=10, retry=_SAGA_RETRY)(_saga)
#: the same saga on its last attempt from the start (issue 13, failure 2)
saga_once = app.workflow(name="saga_once", queue="saga_last", max_attempts=1,
                         retry=_SAGA_RETRY)(_saga)


async def _asaga(wf: Any, crash_at: str, fail: bool = True) -> str:
    """The saga as an ``async def`` body (the async crash matrix)."""
    _CRASH_AT[wf.id] = crash_at
    await wf.step("a", _effect, wf, "a", compensate=_undo(wf, "undo-a"))
    await wf.sleep("nap", 0.05)
    await wf.step("b", _effect, wf, "b", compensate=_undo(wf, "undo-b"))
    await wf.wait_for_event("go")
    await wf.step("c", _fail if fail else _effect, wf, "c", compensate=_undo(wf, "undo-c"))
    return "done"


asaga = app.workflow(name="asaga", queue="asaga", max_attempts=10, retry=_SAGA_RETRY)(_asaga)


@app.workflow(queue="saga", max_attempts=10, retry=Backoff(initial=0.05, maximum=0.2))
def cancellable(wf: Workflow, where: str) -> str:
    """Parks where the cancel tests want it: in a long step, sleeping, or waiting."""
    wf.step("a", _effect, wf, "a", compensate=_undo(wf, "undo-a"))
    if where == "step":
        wf.step("slow", _effect, wf, "slow", 2.0, compensate=_undo(wf, "undo-slow"))
    elif where == "sleep":
        wf.sleep("nap", 3600)
    elif where == "wait":
        wf.wait_for_event("go")
    elif where == "between":
        time.sleep(2.0)  # plain (deterministic) body code between two steps
    wf.step("b", _effect, wf, "b", compensate=_undo(wf, "undo-b"))
    return "done"


def _slow_undo(wf: Workflow, phase: str) -> Any:
    def undo(result: Any) -> None:
        record(wf.id, wf.ctx.attempt, f"{phase}-start")
        time.sleep(2.0)
        record(wf.id, wf.ctx.attempt, phase)
    return undo


@app.workflow(queue="saga", max_attempts=10, retry=_SAGA_RETRY)
def failing_slow_undo(wf: Workflow) -> str:
    """Fails at its second step; its compensation takes 2 s (a cancel arrives in it)."""
    wf.step("a", _effect, wf, "a", compensate=_slow_undo(wf, "undo-a"))
    wf.step("b", _fail, wf, "b")
    return "done"


# -- the claimed-ahead edges (tests/test_workflow_edges.py) ---------------------------------


@app.task(name="ahead_short", queue="ahead")
def ahead_short() -> None:
    """No-op jobs that teach the worker to claim ahead on the "ahead" queue."""


@app.task(name="ahead_block", queue="ahead")
def ahead_block(ctx: JobContext, seconds: float) -> None:
    if ctx.attempt == 1:  # a rerun after its worker was killed does not block again
        time.sleep(seconds)


def _ahead(wf: Workflow, fail: bool) -> str:
    wf.step("a", _effect, wf, "a", compensate=_undo(wf, "undo-a"))
    wf.wait_for_event("go")
    wf.step("c", _fail if fail else _effect, wf, "c", compensate=_undo(wf, "undo-c"))
    return "done"


#: on its last attempt from the start: the run after the event is the last one
ahead_once = app.workflow(name="ahead_once", queue="ahead", max_attempts=1,
                          retry=_SAGA_RETRY)(_ahead)
ahead_saga = app.workflow(name="ahead_saga", queue="ahead", max_attempts=10,
                          retry=_SAGA_RETRY)(_ahead)


# -- a family: a child workflow and two parallel calls (tests/test_workflow_children_chaos.py)

@app.workflow(name="kid", queue="family", max_attempts=10,
              retry=Backoff(initial=0.05, maximum=0.2))
def kid(wf: Workflow, crash_at: str, n: int) -> int:
    _CRASH_AT[wf.id] = crash_at
    wf.step("k1", _effect, wf, "k1")
    return n * 10


@app.task(name="branch", queue="family", max_attempts=10,
          retry=Backoff(initial=0.05, maximum=0.2))
def branch(ctx: JobContext, crash_at: str, n: int) -> int:
    _CRASH_AT[ctx.job_id] = crash_at
    record(ctx.job_id, ctx.attempt, "branch")
    _crash_hook(ctx.job_id, "in-call")  # dies mid-call (once) when crash_at says so
    return n + 1


@app.workflow(name="family", queue="family", max_attempts=10,
              retry=Backoff(initial=0.05, maximum=0.2))
def family(wf: Workflow, parent_at: str, kid_at: str, branch_at: str) -> list[int]:
    _CRASH_AT[wf.id] = parent_at
    c = wf.child(kid, kid_at, 4)
    a, b = wf.parallel(wf.call("x", branch, branch_at, 1), wf.call("y", branch, "", 2))
    wf.step("end", _effect, wf, "end")
    return [c, a, b]


# -- talking to a workflow: an update across a killed worker (tests/test_workflow_talk_chaos.py)

@app.workflow(name="talker", queue="talk", max_attempts=10,
              retry=Backoff(initial=0.05, maximum=0.2))
def talker(wf: Workflow, crash_at: str) -> Any:
    _CRASH_AT[wf.id] = crash_at
    wf.set_state("phase", "waiting")

    def double(payload: dict[str, int]) -> dict[str, int]:
        record(wf.id, wf.ctx.attempt, f"handle:{payload['n']}")
        if payload["n"] < 0:
            raise ValueError("n must not be negative")
        return {"doubled": payload["n"] * 2}

    got = wf.wait_for_update("double", double)
    wf.set_state("phase", "done")
    return got
