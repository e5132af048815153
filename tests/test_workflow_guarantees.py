"""Issue 13: each numbered failure of durable workflows, and the guarantees that replace it.

In-process (``drain``) on both engines, with the injectable clock; the crash-point matrix
with real processes is tests/test_workflow_chaos.py.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from shiftwork import App, Backoff, FakeClock, JobState, Workflow
from shiftwork.testing import drain
from shiftwork.workflow import AsyncWorkflow, EventTimeout


def errors_of(app: App, job_id: int) -> list[str]:
    return [e["type"].rsplit(".", 1)[-1] for e in app.get_job(job_id).errors]


# 1. Killed (here: a compensation failing) during compensation, and the failed step would
#    succeed on replay: the decision is recorded, so the replay goes on compensating.
def test_1_compensation_continues_after_an_interruption_even_if_the_step_would_succeed(
        wapp: App, clock: FakeClock) -> None:
    log: list[str] = []
    world = {"ship_fails": True, "undo_b_fails": True}

    def ship() -> None:
        log.append("ship")
        if world["ship_fails"]:
            raise ValueError("no courier")

    def undo_b(_: Any) -> None:
        if world["undo_b_fails"]:
            world["undo_b_fails"] = False
            world["ship_fails"] = False  # the world changed: ship would succeed now
            raise ConnectionError("warehouse down")
        log.append("undo-b")

    @wapp.workflow(max_attempts=3, retry=Backoff(initial=0, jitter=False,
                                                 non_retryable=(ValueError,)))
    def saga(wf: Workflow) -> str:
        wf.step("a", log.append, "a", compensate=lambda _: log.append("undo-a"))
        wf.step("b", log.append, "b", compensate=undo_b)
        wf.step("ship", ship)
        return "shipped"

    job = saga.enqueue()
    drain(wapp)
    drain(wapp)
    assert log == ["a", "b", "ship", "undo-b", "undo-a"]  # ship was not run again
    assert wapp.get_job(job.id).state is JobState.DEAD
    assert wapp.get_workflow(job.id).status == "compensated"
    assert errors_of(wapp, job.id) == ["WorkflowCompensated"]
    assert {s.name: s.tries for s in wapp.workflow_history(job.id)}["compensate:b"] == 1


# 2. The decision gives compensation a fresh budget: the last attempt's compensation is
#    retried, not marked dead. (The kill -9 variant is in test_workflow_chaos.py.)
def test_2_compensation_on_the_last_attempt_has_attempts_of_its_own(wapp: App,
                                                                  clock: FakeClock) -> None:
    undone: list[str] = []
    fails = {"n": 2}

    def undo(_: Any) -> None:
        if fails["n"]:
            fails["n"] -= 1
            raise ConnectionError("refund API down")
        undone.append("refund")

    @wapp.workflow(max_attempts=1, retry=Backoff(initial=0, jitter=False))
    def pay(wf: Workflow) -> None:
        wf.step("charge", lambda: "ch_1", compensate=undo)
        wf.step("ship", lambda: 1 / 0)

    job = pay.enqueue()
    for _ in range(4):
        drain(wapp)
        clock.advance(5)
    assert undone == ["refund"]
    assert wapp.get_workflow(job.id).status == "compensated"
    assert wapp.get_job(job.id).state is JobState.DEAD


# 3. Cancel reaches a workflow wherever it is, and compensates.
@pytest.mark.parametrize("where", ["sleeping", "waiting", "in-step", "between-steps"])
def test_3_cancel_compensates_wherever_the_workflow_is(wapp: App, where: str) -> None:
    log: list[str] = []

    def step_b() -> str:
        log.append("b")
        if where in ("in-step", "between-steps"):
            wapp.cancel_job(job.id)  # arrives while the workflow runs
        return "b"

    @wapp.workflow
    def flow(wf: Workflow) -> str:
        wf.step("a", log.append, "a", compensate=lambda _: log.append("undo-a"))
        if where == "sleeping":
            wf.sleep("nap", 3600)
        wf.step("b", step_b, compensate=lambda _: log.append("undo-b"))
        if where in ("waiting", "in-step"):
            wf.wait_for_event("go")
        wf.step("c", log.append, "c")
        return "done"

    job = flow.enqueue()
    drain(wapp)
    if where in ("sleeping", "waiting"):
        assert wapp.get_job(job.id).state is JobState.SCHEDULED
        wapp.cancel_job(job.id)
        drain(wapp)
    final = wapp.get_job(job.id)
    assert final.state is JobState.CANCELLED, (where, final.errors)
    assert wapp.get_workflow(job.id).status == "cancelled"
    undo = ["undo-b", "undo-a"] if where != "sleeping" else ["undo-a"]
    assert [x for x in log if x.startswith("undo")] == undo
    assert "c" not in log
    if where == "in-step":  # the event that arrives later does not resume it
        with pytest.raises(Exception, match="not active"):
            wapp.send_event(job.id, "go", {})


def test_3_cancel_while_compensating_lets_compensation_finish(wapp: App) -> None:
    log: list[str] = []

    def undo_b(_: Any) -> None:
        wapp.cancel_job(job.id)
        log.append("undo-b")

    @wapp.workflow(retry=Backoff(non_retryable=(ValueError,)))
    def flow(wf: Workflow) -> None:
        wf.step("a", log.append, "a", compensate=lambda _: log.append("undo-a"))
        wf.step("b", log.append, "b", compensate=undo_b)
        wf.step("c", lambda: (_ for _ in ()).throw(ValueError("no")))

    job = flow.enqueue()
    drain(wapp)
    assert log == ["a", "b", "undo-b", "undo-a"]
    assert wapp.get_workflow(job.id).status == "compensated"


# 4. Suspension cannot be swallowed by the body's ``except Exception``.
def test_4_a_sleep_inside_except_exception_still_suspends(wapp: App, clock: FakeClock) -> None:
    @wapp.workflow
    def sneaky(wf: Workflow) -> str:
        try:
            wf.sleep("nap", 60)
        except Exception:
            return "swallowed"
        return "slept"

    job = sneaky.enqueue()
    drain(wapp)
    assert wapp.get_job(job.id).state is JobState.SCHEDULED
    clock.advance(61)
    drain(wapp)
    assert wapp.get_job(job.id).result == "slept"


# 5. A payload that looks like the old timeout marker is only a payload.
def test_5_timeout_is_recorded_out_of_band(wapp: App, clock: FakeClock) -> None:
    @wapp.workflow
    def flow(wf: Workflow) -> Any:
        got = wf.wait_for_event("go", timeout=60)
        wf.sleep("then", 10)  # forces a replay of the wait
        return got

    job = flow.enqueue()
    wapp.send_event(job.id, "go", {"timed_out": True})
    drain(wapp)
    clock.advance(11)
    drain(wapp)
    assert wapp.get_job(job.id).result == {"timed_out": True}

    @wapp.workflow(max_attempts=1)
    def late(wf: Workflow) -> str:
        try:
            wf.wait_for_event("go", timeout=60)
        except EventTimeout:
            wf.sleep("after", 5)
            return "timed out"
        return "arrived"

    job2 = late.enqueue()
    drain(wapp)
    clock.advance(61)
    drain(wapp)
    clock.advance(6)
    drain(wapp)
    assert wapp.get_job(job2.id).result == "timed out"
    rec = {s.name: s for s in wapp.workflow_history(job2.id)}["event:go"]
    assert rec.outcome == "timed_out" and rec.result is None


# 6. Replay is checked; patched lets new code run beside in-flight instances.
CODE = {"variant": "v1"}


def _body(wf: Workflow, log: list[str]) -> str:
    v = CODE["variant"]
    wf.step("renamed" if v == "renamed" else "a", log.append, "a2" if v == "reargued" else "a")
    if v == "inserted":
        wf.step("new", log.append, "new")
    if v == "patched" and wf.patched("add-new"):
        wf.step("new", log.append, "new")
    if v != "removed":
        wf.sleep("nap", 60)
    wf.step("b", log.append, "b")
    return v


@pytest.mark.parametrize("variant,match", [
    ("inserted", "at step 'new'.*records sleep 'nap' at position 1"),
    ("removed", "sleep 'nap' at position 1.*step 'b'"),
    ("renamed", "step 'renamed'.*records step 'a'"),
    ("reargued", "non-deterministic replay at step 'a'"),
])
def test_6_divergent_replay_stops_the_workflow(wapp: App, clock: FakeClock, variant: str,
                                               match: str) -> None:
    log: list[str] = []
    CODE["variant"] = "v1"
    flow = wapp.workflow(name="flow")(lambda wf: _body(wf, log))
    job = flow.enqueue()
    drain(wapp)  # a done, asleep at nap
    CODE["variant"] = variant
    clock.advance(61)
    drain(wapp)
    dead = wapp.get_job(job.id)
    assert dead.state is JobState.DEAD, dead.errors
    assert dead.errors[-1]["type"].endswith("NonDeterminismError")
    assert __import__("re").search(match, dead.errors[-1]["message"]), dead.errors[-1]["message"]
    assert log == ["a"]  # nothing new ran, nothing was compensated
    CODE["variant"] = "v1"  # fixed: retried, it goes on from its history
    wapp.retry_job(job.id)
    drain(wapp)
    assert wapp.get_job(job.id).result == "v1" and log == ["a", "b"]


def test_6_patched_new_path_for_new_instances_old_for_in_flight(wapp: App,
                                                                clock: FakeClock) -> None:
    log: list[str] = []
    CODE["variant"] = "v1"
    flow = wapp.workflow(name="flow")(lambda wf: _body(wf, log))
    old = flow.enqueue()
    drain(wapp)  # in flight, past the place of the patch
    CODE["variant"] = "patched"
    new = flow.enqueue()
    drain(wapp)
    clock.advance(61)
    drain(wapp)
    assert wapp.get_job(old.id).state is JobState.SUCCEEDED
    assert wapp.get_job(new.id).state is JobState.SUCCEEDED
    assert [s.name for s in wapp.workflow_history(old.id)] == ["a", "nap", "b"]
    assert [s.name for s in wapp.workflow_history(new.id)] == ["a", "patch:add-new", "new",
                                                               "nap", "b"]
    CODE["variant"] = "v1"


def test_6_deprecate_patch_accepts_both_histories(wapp: App, clock: FakeClock) -> None:
    state = {"phase": "patched"}

    @wapp.workflow
    def flow(wf: Workflow) -> str:
        if state["phase"] == "patched":
            if wf.patched("v2"):
                wf.step("new", lambda: 1)
        else:
            wf.deprecate_patch("v2")
            wf.step("new", lambda: 1)
        wf.sleep("nap", 60)
        return "ok"

    marked = flow.enqueue()
    drain(wapp)
    state["phase"] = "deprecated"
    fresh = flow.enqueue()
    drain(wapp)
    clock.advance(61)
    drain(wapp)
    assert wapp.get_job(marked.id).result == "ok" and wapp.get_job(fresh.id).result == "ok"
    assert "patch:v2" not in [s.name for s in wapp.workflow_history(fresh.id)]


# 7. An event sent twice under one key is delivered once.
def test_7_event_keys_dedupe(wapp: App) -> None:
    @wapp.workflow
    def two_waits(wf: Workflow) -> list[Any]:
        return [wf.wait_for_event("paid", step="first"), wf.wait_for_event("paid", step="second")]

    job = two_waits.enqueue()
    first = wapp.send_event(job.id, "paid", {"n": 1}, key="webhook-77")
    again = wapp.send_event(job.id, "paid", {"n": 1}, key="webhook-77")
    assert first == again
    drain(wapp)
    assert wapp.get_job(job.id).state is JobState.SCHEDULED  # still waiting in "second"
    wapp.send_event(job.id, "paid", {"n": 2}, key="webhook-78")
    drain(wapp)
    assert wapp.get_job(job.id).result == [{"n": 1}, {"n": 2}]


# 8. Per-step retries, async bodies, a workflow's attempts.
def test_8_a_step_retries_itself_without_spending_workflow_attempts(wapp: App,
                                                                   clock: FakeClock) -> None:
    tries = {"n": 0}

    def flaky() -> str:
        tries["n"] += 1
        if tries["n"] < 3:
            raise ConnectionError("try again")
        return "ok"

    @wapp.workflow(max_attempts=1)
    def flow(wf: Workflow) -> str:
        return str(wf.step("flaky", flaky, max_attempts=3,
                           retry=Backoff(initial=5, coefficient=1, jitter=False)))

    job = flow.enqueue()
    for _ in range(3):
        drain(wapp)
        clock.advance(6)
    done = wapp.get_job(job.id)
    assert done.state is JobState.SUCCEEDED and done.result == "ok", done.errors
    assert done.errors == []  # no workflow attempt spent
    assert {s.name: s.tries for s in wapp.workflow_history(job.id)} == {"flaky": 2}


def test_8_a_step_that_spends_its_attempts_fails_the_workflow_and_compensates(
        wapp: App, clock: FakeClock) -> None:
    undone: list[str] = []

    @wapp.workflow(max_attempts=5)
    def flow(wf: Workflow) -> None:
        wf.step("a", lambda: 1, compensate=lambda _: undone.append("a"))
        wf.step("never", lambda: 1 / 0, max_attempts=2, retry=Backoff(initial=0))

    job = flow.enqueue()
    for _ in range(3):
        drain(wapp)
        clock.advance(1)
    assert undone == ["a"]
    assert wapp.get_job(job.id).state is JobState.DEAD
    assert errors_of(wapp, job.id) == ["WorkflowCompensated"]  # one failure: the final one


def test_8_sleeps_spend_no_attempts_and_attempt_numbers_say_so(wapp: App,
                                                             clock: FakeClock) -> None:
    """Three sleeps with max_attempts=2: a suspension is not an attempt, so every wake
    reads attempt 1 of 2 (max_attempts is not raised), and a real failure after the
    sleeps still has its second attempt."""
    seen: list[tuple[int, int]] = []
    fail = {"once": True}

    def last() -> str:
        if fail["once"]:
            fail["once"] = False
            raise ConnectionError("down once")
        return "done"

    @wapp.workflow(max_attempts=2, retry=Backoff(initial=0, jitter=False))
    def flow(wf: Workflow) -> str:
        seen.append((wf.ctx.counted_attempt, wf.ctx.max_attempts))
        for i in range(3):
            wf.sleep(f"nap-{i}", 60)
        return str(wf.step("last", last))

    job = flow.enqueue()
    for _ in range(3):
        drain(wapp)
        asleep = wapp.get_job(job.id)
        assert asleep.state is JobState.SCHEDULED
        assert (asleep.counted_attempt, asleep.max_attempts) == (0, 2)  # nothing spent
        clock.advance(61)
    drain(wapp)
    done = wapp.get_job(job.id)
    assert done.state is JobState.SUCCEEDED and done.result == "done", done.errors
    assert seen == [(1, 2)] * 4 + [(2, 2)]  # each wake is attempt 1; the retry is 2
    assert (done.attempt, done.uncounted, done.counted_attempt, done.max_attempts) == (
        5, 3, 2, 2)
    assert errors_of(wapp, job.id) == ["ConnectionError"]


def test_8_step_timeout(wapp: App) -> None:
    import time

    @wapp.workflow(max_attempts=1)
    def flow(wf: Workflow) -> None:
        wf.step("slow", time.sleep, 2, timeout=0.1)

    job = flow.enqueue()
    drain(wapp)
    assert "timed out after 0.1s" in wapp.get_job(job.id).errors[-1]["message"]


def test_8_async_body_equals_sync(wapp: App, clock: FakeClock) -> None:
    log: list[str] = []

    async def fetch(n: int) -> int:
        await asyncio.sleep(0)
        log.append(f"fetch{n}")
        return n * 2

    @wapp.workflow
    async def flow(wf: AsyncWorkflow, n: int) -> int:
        doubled = await wf.step("fetch", fetch, n)
        await wf.sleep("nap", 60)
        got = await wf.wait_for_event("go")
        return int(doubled + got["x"])

    job = flow.enqueue(4)
    drain(wapp)
    wapp.send_event(job.id, "go", {"x": 1})
    clock.advance(61)
    drain(wapp)
    assert wapp.get_job(job.id).result == 9 and log == ["fetch4"]
