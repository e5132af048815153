"""Child workflows (wf.child) and parallel steps (wf.parallel), on both engines."""

from __future__ import annotations

from collections import Counter

import pytest

from shiftwork import App, Backoff, JobState, Workflow
from shiftwork.testing import drain
from shiftwork.workflow import ChildFailed, WorkflowError

from .conftest import running_worker, wait_for


def _jobs_by_task(app: App) -> Counter[str]:
    return Counter(j.task for j in app.list_jobs(limit=1000))


def test_a_child_workflow_is_awaited_and_its_result_returned(wapp: App) -> None:
    @wapp.workflow
    def build_profile(wf: Workflow, user_id: int) -> dict[str, object]:
        name = wf.step("name", lambda: f"user{user_id}")
        return {"user": user_id, "name": name}

    @wapp.workflow
    def onboard(wf: Workflow, user_id: int) -> str:
        profile = wf.child(build_profile, user_id)
        return wf.step("greet", lambda: f"hello {profile['name']}")

    job = onboard.enqueue(7)
    drain(wapp)
    got = wapp.get_job(job.id)
    assert got.state is JobState.SUCCEEDED and got.result == "hello user7"
    assert _jobs_by_task(wapp)[build_profile.name] == 1
    history = {s.name: s for s in wapp.workflow_history(job.id)}
    child_rec = history[f"child:{build_profile.name}"]
    assert child_rec.kind == "child" and child_rec.result["results"] == [
        {"user": 7, "name": "user7"}]


def test_parallel_calls_run_as_jobs_and_join_in_order(wapp: App) -> None:
    sent: list[int] = []

    @wapp.task
    def send_mail(user_id: int) -> str:
        sent.append(user_id)
        return f"mail:{user_id}"

    @wapp.task
    def push_crm(user_id: int) -> dict[str, int]:
        return {"crm": user_id}

    @wapp.workflow
    def onboard(wf: Workflow, user_id: int) -> list[object]:
        a, b = wf.parallel(wf.call("mail", send_mail, user_id),
                           wf.call("crm", push_crm, user_id))
        return [a, b]

    job = onboard.enqueue(3)
    drain(wapp)
    got = wapp.get_job(job.id)
    assert got.state is JobState.SUCCEEDED and got.result == ["mail:3", {"crm": 3}]
    assert sent == [3]
    # each call ran as a job of its own task (its queue and limits apply: issue 26, 10)
    assert _jobs_by_task(wapp)[send_mail.name] == 1
    assert _jobs_by_task(wapp)[push_crm.name] == 1
    assert "shiftwork.workflow_call" not in _jobs_by_task(wapp)


def test_a_failed_branch_raises_after_all_settle_and_fails_the_parent(wapp: App) -> None:
    ran: list[str] = []

    @wapp.task(max_attempts=2, retry=Backoff(initial=0, jitter=False))
    def broken(user_id: int) -> None:
        ran.append("broken")
        raise RuntimeError("crm is down")

    @wapp.task
    def fine(user_id: int) -> str:
        ran.append("fine")
        return "ok"

    caught: list[ChildFailed] = []

    @wapp.workflow(max_attempts=1)
    def onboard(wf: Workflow, user_id: int) -> str:
        try:
            wf.parallel(wf.call("crm", broken, user_id), wf.call("mail", fine, user_id))
        except ChildFailed as exc:
            caught.append(exc)
            raise
        return "unreachable"

    job = onboard.enqueue(1)
    drain(wapp)
    assert ran.count("broken") == 2 and ran.count("fine") == 1
    assert wapp.get_job(job.id).state is JobState.DEAD
    (exc,) = caught
    assert "crm is down" in str(exc) and exc.errors[0]["step"] == "crm"
    assert exc.errors[0]["type"] == "RuntimeError"


def test_a_failed_child_raises_child_failed_in_the_parent(wapp: App) -> None:
    @wapp.workflow(max_attempts=1)
    def build_profile(wf: Workflow, user_id: int) -> None:
        wf.step("explode", lambda: 1 / 0)

    seen: list[str] = []

    @wapp.workflow(max_attempts=1)
    def onboard(wf: Workflow, user_id: int) -> None:
        try:
            wf.child(build_profile, user_id)
        except ChildFailed as exc:
            seen.append(str(exc))
            raise

    job = onboard.enqueue(1)
    drain(wapp)
    assert wapp.get_job(job.id).state is JobState.DEAD
    assert seen and "WorkflowFailed" in seen[0] and "division by zero" in seen[0]


def test_cancelling_the_parent_cancels_its_children(wapp: App) -> None:
    @wapp.workflow
    def slow_child(wf: Workflow) -> None:
        wf.wait_for_event("never")

    @wapp.workflow
    def parent(wf: Workflow) -> None:
        wf.child(slow_child)

    job = parent.enqueue()
    drain(wapp)
    (child,) = [j for j in wapp.list_jobs(limit=100) if j.task == slow_child.name]
    assert wapp.get_job(child.id).state is JobState.SCHEDULED
    wapp.cancel_job(job.id)
    drain(wapp)
    assert wapp.get_job(job.id).state is JobState.CANCELLED
    assert wapp.get_job(child.id).state is JobState.CANCELLED


def test_a_bulk_cancel_takes_the_same_path(wapp: App) -> None:
    """A bulk cancel's batch (one transaction) does what cancel_job does one by one: the
    started parent is woken to cancel itself (and its child with it), a member cancelled
    before it ran fails its parent's join, a plain waiting job is cancelled."""
    @wapp.workflow
    def slow_child(wf: Workflow) -> None:
        wf.wait_for_event("never")

    @wapp.workflow
    def parent(wf: Workflow) -> None:
        wf.child(slow_child)

    @wapp.task(queue="later")
    def never(x: int) -> int:
        return x

    seen: list[ChildFailed] = []

    @wapp.workflow(max_attempts=1)
    def joiner(wf: Workflow) -> None:
        try:
            wf.parallel(wf.call("b", never, 2))
        except ChildFailed as exc:
            seen.append(exc)
            raise

    job, joined = parent.enqueue(), joiner.enqueue()
    plain = never.enqueue(9)
    drain(wapp, ["default"])
    (child,) = [j for j in wapp.list_jobs(limit=100) if j.task == slow_child.name]
    result = wapp.bulk("cancel", task=parent.name, who="test")
    assert result.done == 1
    assert wapp.bulk("cancel", queue="later", who="test").done == 2  # member and plain
    drain(wapp, ["default"])
    assert wapp.get_job(job.id).state is JobState.CANCELLED
    assert wapp.get_job(child.id).state is JobState.CANCELLED
    assert wapp.get_job(plain.id).state is JobState.CANCELLED
    assert wapp.get_job(joined.id).state is JobState.DEAD
    assert seen and seen[0].errors[0]["type"] == "JobCancelled"


def test_bad_calls_are_refused(wapp: App) -> None:
    @wapp.task
    def plain() -> None: ...

    errors: list[str] = []

    @wapp.workflow(max_attempts=1)
    def wrong(wf: Workflow, which: str) -> None:
        try:
            if which == "child":
                wf.child(plain)
            elif which == "empty":
                wf.parallel()
            elif which == "dup":
                wf.parallel(wf.call("a", plain), wf.call("a", plain))
            else:
                wf.parallel(wf.call("a", print))
        except WorkflowError as exc:
            errors.append(str(exc))

    for which in ("child", "empty", "dup", "fn"):
        wrong.enqueue(which)
    drain(wapp)
    assert len(errors) == 4
    assert "wf.child needs a workflow" in errors[0]
    assert "one or more" in errors[1] and "must differ" in errors[2]
    assert "registered with @app.task" in errors[3]


@pytest.mark.parametrize("n", [3])
def test_replays_do_not_enqueue_twice(wapp: App, n: int) -> None:
    @wapp.task
    def double(x: int) -> int:
        return 2 * x

    @wapp.workflow
    def fan(wf: Workflow) -> list[int]:
        out = wf.parallel(*(wf.call(f"b{i}", double, i) for i in range(n)))
        wf.sleep("nap", 0)
        return [int(x) for x in out]

    job = fan.enqueue()
    drain(wapp)
    assert wapp.get_job(job.id).result == [0, 2, 4]
    assert _jobs_by_task(wapp)[double.name] == n


def test_async_parent_and_async_child(wapp: App) -> None:
    @wapp.task
    def inc(x: int) -> int:
        return x + 1

    @wapp.workflow
    async def kid(wf: Workflow, x: int) -> int:
        return int(await wf.step("double", lambda: 2 * x))  # type: ignore[misc]

    @wapp.workflow
    async def parent(wf: Workflow, x: int) -> list[int]:
        k = await wf.child(kid, x)  # type: ignore[misc]
        a, b = await wf.parallel(wf.call("a", inc, k), wf.call("b", inc, 0))  # type: ignore[misc]
        return [k, a, b]

    job = parent.enqueue(5)
    drain(wapp)
    assert wapp.get_job(job.id).result == [10, 11, 1]


def test_a_wide_fan_out_keeps_its_keys_short(wapp: App) -> None:
    @wapp.task
    def leaf(i: int) -> int:
        return i

    @wapp.workflow
    def fan(wf: Workflow, n: int) -> int:
        return sum(wf.parallel(*(wf.call(f"c{i}", leaf, i) for i in range(n))))

    job = fan.enqueue(300)
    drain(wapp)
    assert wapp.get_job(job.id).result == sum(range(300))
    assert [s.name for s in wapp.workflow_history(job.id) if s.kind == "parallel"] == [
        "parallel:c0..c299(300)"]


def test_a_member_cancelled_on_its_own_fails_the_join(wapp: App) -> None:
    @wapp.task(queue="later")
    def never(x: int) -> int:
        return x

    @wapp.task
    def quick(x: int) -> int:
        return x

    seen: list[ChildFailed] = []

    @wapp.workflow(max_attempts=1)
    def parent(wf: Workflow) -> None:
        try:
            wf.parallel(wf.call("a", quick, 1), wf.call("b", never, 2))
        except ChildFailed as exc:
            seen.append(exc)
            raise

    job = parent.enqueue()
    drain(wapp, ["default"])
    (member,) = [j for j in wapp.list_jobs(limit=100) if j.queue == "later"]
    wapp.cancel_job(member.id)
    drain(wapp, ["default"])
    assert wapp.get_job(job.id).state is JobState.DEAD
    assert seen and seen[0].errors[0]["step"] == "b"
    assert seen[0].errors[0]["type"] == "JobCancelled"


def test_a_wide_parallel_wakes_its_parent_once_at_the_last_report(wapp: App) -> None:
    """50 members report; only the 50th wakes the parent (issue #15): the parent runs
    twice in all (start, join), not once per member."""
    runs: list[int] = []

    @wapp.task(queue="members")
    def leaf(i: int) -> int:
        return i * 2

    @wapp.workflow(queue="parents")
    def fan(wf: Workflow) -> int:
        runs.append(1)
        return sum(wf.parallel(*(wf.call(f"c{i}", leaf, i) for i in range(50))))

    job = fan.enqueue()
    assert drain(wapp, queues=["parents"]).ran == 1  # enqueues the 50, then suspends
    assert drain(wapp, queues=["members"], max_jobs=49).ran == 49
    parked = wapp.get_job(job.id)
    assert parked.state is JobState.SCHEDULED and parked.run_at > wapp.clock.now()
    assert drain(wapp, queues=["parents"]).ran == 0  # 49 reports in: still asleep
    assert drain(wapp, queues=["members"]).ran == 1
    assert wapp.get_job(job.id).run_at <= wapp.clock.now()  # the last report woke it
    assert drain(wapp, queues=["parents"]).ran == 1
    got = wapp.get_job(job.id)
    assert got.state is JobState.SUCCEEDED and got.result == sum(i * 2 for i in range(50))
    assert len(runs) == 2
    history = {s.name: s for s in wapp.workflow_history(job.id)}
    assert sum(1 for name in history if name.startswith("parallel")) == 51  # step + 50 takes


def test_a_wide_parallel_in_a_worker_replays_the_parent_a_few_times(app: App) -> None:
    """The same with a real worker running parent and members at once: the parent runs a
    small, fixed number of times (at most 3), not once per member."""
    runs: list[int] = []

    @app.task
    def leaf(i: int) -> int:
        return i

    @app.workflow
    def fan(wf: Workflow) -> int:
        runs.append(1)
        return len(wf.parallel(*(wf.call(f"c{i}", leaf, i) for i in range(50))))

    job = fan.enqueue()
    with running_worker(app, {"default": 8}):
        wait_for(lambda: app.get_job(job.id).state is JobState.SUCCEEDED, 60)
    assert app.get_job(job.id).result == 50
    assert 1 <= len(runs) <= 3, runs
