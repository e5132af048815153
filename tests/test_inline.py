"""The inline test mode: a job runs at enqueue, through the real storage and rules."""

from __future__ import annotations

from typing import Any

from shiftwork import App, Backoff, ConfigurationError, JobContext, JobState, PayloadError
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


def test_app_testing_inline_runs_every_enqueue(make_app: Any) -> None:
    """App(testing="inline"): the context manager's mechanism, for the App's whole life."""
    app: App = make_app(testing="inline")
    seen: list[Any] = []

    @app.task(max_attempts=2, retry=Backoff(initial=3600, jitter=False))
    def charge(ctx: JobContext, order: dict[str, Any]) -> int:
        seen.append((ctx.attempt, order))
        if ctx.attempt == 1:
            raise RuntimeError("card declined once")
        return int(order["cents"])

    result = charge.enqueue({"cents": 250, "items": ("a", "b")})
    # Ran at once, retried at once, arguments through JSON as for a worker.
    assert seen == [(1, {"cents": 250, "items": ["a", "b"]}),
                    (2, {"cents": 250, "items": ["a", "b"]})]
    job = app.get_job(result.id)
    assert job.state is JobState.SUCCEEDED and job.result == 250
    assert (app.inline_results.succeeded, app.inline_results.retrying) == (1, 1)
    try:
        charge.enqueue({"cents": object()})  # refused at enqueue, as always
    except PayloadError:
        pass
    else:
        raise AssertionError("a non-JSON argument was accepted")
    charge.using(delay=60).enqueue({"cents": 1})  # delayed: waits, as for a worker
    assert len(seen) == 2 and job_states(app)[JobState.SCHEDULED] == 1


def test_app_testing_inline_and_context_manager_are_one_mechanism(make_app: Any) -> None:
    app: App = make_app(testing="inline")
    calls: list[int] = []

    @app.task
    def count(n: int) -> None:
        calls.append(n)

    with inline(app) as ran:  # one hook, two counts: each job runs once
        count.enqueue(1)
    count.enqueue(2)
    assert calls == [1, 2] and ran.succeeded == 1 and app.inline_results.succeeded == 2


def test_app_testing_unknown_mode_is_refused(tmp_path: Any) -> None:
    try:
        App(f"sqlite:///{tmp_path / 'x.db'}", testing="eager")
    except ConfigurationError as exc:
        assert "testing='eager'" in str(exc) and "'inline'" in str(exc)
    else:
        raise AssertionError("an unknown test mode was accepted")


def test_an_ambient_transaction_is_joined_and_inline_jobs_run_on_its_commit(
        tmp_path: Any) -> None:
    """What the Django integration sets: enqueues without conn= join the caller's open
    transaction, and the inline mode runs their jobs once it commits, not before."""
    import sqlite3

    app = App(f"sqlite:///{tmp_path / 'jobs.db'}", testing="inline")
    app.migrate()
    ran: list[int] = []

    @app.task
    def work(n: int) -> None:
        ran.append(n)

    conn = sqlite3.connect(tmp_path / "jobs.db", isolation_level=None)
    after_commit: list[Any] = []
    app.runtime.ambient_transaction = lambda: conn
    app.runtime.on_commit = after_commit.append
    conn.execute("BEGIN")
    work.enqueue(1)
    assert ran == [] and enqueued(app, work) == []  # in the open transaction: unseen
    conn.execute("ROLLBACK")
    after_commit.clear()  # (a framework drops these on rollback)
    conn.execute("BEGIN")
    work.enqueue(2)
    conn.execute("COMMIT")
    app.runtime.ambient_transaction = None
    for fn in after_commit:
        fn()
    assert ran == [2] and app.inline_results.succeeded == 1
    conn.close()
    app.close()


def test_groups_chains_and_callbacks_run_inline(make_app: Any) -> None:
    """Composition takes the same enqueue path: a group, its callback (with it or added
    after its members ran), and a chain all run at once in the inline mode."""
    app: App = make_app(testing="inline")

    @app.task
    def double(n: int) -> int:
        return n * 2

    @app.task
    def total(label: str, results: list[int]) -> str:
        return f"{label}:{sum(results)}"

    g = app.group((double.call(i) for i in range(4)), then=total.call("with"))
    assert g.callback is not None and g.callback.result(timeout=1) == "with:12"
    later = app.group([double.call(5)])
    assert later.progress().done == 1  # ran at enqueue
    assert later.then(total.call("after")).result(timeout=1) == "after:10"
    assert app.chain(double.call(1), double.call(), double.call()).result(timeout=1) == 8
    assert app.inline_results.succeeded == 4 + 1 + 1 + 1 + 3


def test_a_group_joins_an_ambient_transaction(tmp_path: Any) -> None:
    """A group enqueued without conn= inside the framework's open transaction is part of
    it: a rollback leaves nothing behind."""
    import sqlite3

    app = App(f"sqlite:///{tmp_path / 'jobs.db'}")
    app.migrate()

    @app.task
    def work(n: int) -> None: ...

    conn = sqlite3.connect(tmp_path / "jobs.db", isolation_level=None)
    app.runtime.ambient_transaction = lambda: conn
    conn.execute("BEGIN")
    app.group(work.call(i) for i in range(3))
    conn.execute("ROLLBACK")
    app.runtime.ambient_transaction = None
    assert app.list_jobs() == []
    conn.close()
    app.close()
