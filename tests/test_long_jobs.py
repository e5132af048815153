"""Long jobs in one process, on both engines: checkpoints, progress, pause, effect keys."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from click.testing import CliRunner

from shiftwork import App, FakeClock, JobCancelled, JobContext, JobState
from shiftwork.cli import format as cli_format
from shiftwork.cli import main
from shiftwork.core.errors import ConfigurationError, JobPaused, LeaseLost, PayloadError
from shiftwork.model.outcome import Outcome

from .conftest import running_worker, wait_for


def claim_ctx(app: App, queue: str = "default") -> JobContext:
    [c] = app.store.jobs.claim(queue, 1, "test-worker", app.settings.lease_seconds)
    return JobContext(app.runtime, c.id, c.task, c.queue, c.attempt, c.max_attempts,
                      last_checkpoint=c.checkpoint)


def user_table(app: App, conn: Any = None) -> str:
    return "notes" if app.store.engine == "sqlite" else f'"{app.schema}".notes'


def mark(app: App) -> str:
    return "?" if app.store.engine == "sqlite" else "%s"


@pytest.fixture
def clocked(make_app: Callable[..., App]) -> tuple[App, FakeClock]:
    clock = FakeClock(datetime.now(UTC))
    app = make_app(clock=clock)

    @app.task(name="long")
    def long(ctx: JobContext) -> None: ...

    return app, clock


def steal(app: App, clock: FakeClock) -> JobContext:
    """Let the current attempt's lease expire, rescue the job and claim it again."""
    clock.advance(app.settings.lease_seconds + 1)
    assert app.store.jobs.rescue()
    return claim_ctx(app)


def test_checkpoint_is_saved_and_resumed(clocked: tuple[App, FakeClock]) -> None:
    app, clock = clocked
    job = app.enqueue("long")
    ctx = claim_ctx(app)
    assert ctx.last_checkpoint is None
    ctx.checkpoint({"after": 41, "note": "x"})
    assert app.get_job(job.id).checkpoint == {"after": 41, "note": "x"}
    resumed = steal(app, clock)
    assert resumed.attempt == 2 and resumed.last_checkpoint == {"after": 41, "note": "x"}


def test_stale_attempt_cannot_overwrite_a_newer_checkpoint(clocked: tuple[App, FakeClock]) -> None:
    app, clock = clocked
    job = app.enqueue("long")
    stale = claim_ctx(app)
    stale.checkpoint(1)
    fresh = steal(app, clock)
    fresh.checkpoint(2)
    with pytest.raises(LeaseLost, match="no longer holds"):
        stale.checkpoint(999)
    with pytest.raises(LeaseLost):  # and it stays stopped
        stale.heartbeat()
    assert app.get_job(job.id).checkpoint == 2


def test_checkpoint_must_be_json(clocked: tuple[App, FakeClock]) -> None:
    app, _ = clocked
    app.enqueue("long")
    ctx = claim_ctx(app)
    with pytest.raises(PayloadError, match="checkpoint"):
        ctx.checkpoint({"at": datetime.now(UTC)})


def test_cancel_is_seen_at_the_next_checkpoint(clocked: tuple[App, FakeClock]) -> None:
    app, _ = clocked
    job = app.enqueue("long")
    ctx = claim_ctx(app)
    app.cancel_job(job.id)
    assert not ctx.cancelled  # no heartbeat has told it yet
    with pytest.raises(JobCancelled, match="checkpoint"):
        ctx.checkpoint({"after": 7})
    assert ctx.cancelled
    assert app.get_job(job.id).checkpoint == {"after": 7}  # saved, then stopped


def test_heartbeat_extends_the_lease_and_sees_cancel(clocked: tuple[App, FakeClock]) -> None:
    app, clock = clocked
    job = app.enqueue("long")
    ctx = claim_ctx(app)
    before = app.get_job(job.id).lease_expires_at
    clock.advance(1)
    ctx.heartbeat()
    after = app.get_job(job.id).lease_expires_at
    assert before is not None and after is not None and after > before
    app.cancel_job(job.id)
    with pytest.raises(JobCancelled, match="heartbeat"):
        ctx.heartbeat()


def test_progress_is_throttled_but_the_final_value_lands(clocked: tuple[App, FakeClock]) -> None:
    app, _ = clocked
    job = app.enqueue("long")
    ctx = claim_ctx(app)
    ctx.progress(1, 10, "starting")  # first report: written
    ctx.progress(2, 10)  # within the interval: held back
    assert app.get_job(job.id).progress == {"done": 1, "total": 10, "message": "starting"}
    ctx.progress(10, 10, "done")  # reached the total: written at once
    assert app.get_job(job.id).progress == {"done": 10, "total": 10, "message": "done"}
    ctx.progress(11)
    ctx.checkpoint("c")  # a checkpoint carries pending progress
    assert app.get_job(job.id).progress == {"done": 11}
    with pytest.raises(PayloadError, match="done"):
        ctx.progress(-1)
    with pytest.raises(PayloadError, match="total"):
        ctx.progress(1, "ten")  # type: ignore[arg-type]


def test_batches_resume_after_the_last_checkpoint(clocked: tuple[App, FakeClock]) -> None:
    app, clock = clocked
    job = app.enqueue("long")
    rows = list(range(1, 26))

    def fetch(after: int | None, n: int) -> list[int]:
        return [r for r in rows if r > (after or 0)][:n]

    ctx = claim_ctx(app)
    seen: list[list[int]] = []
    for batch in ctx.batches(fetch, key=lambda r: r, size=10, total=25):
        seen.append(list(batch))
        if batch.number == 2:
            break  # the attempt dies while processing batch 2: only batch 1 is checkpointed
    assert app.get_job(job.id).checkpoint == {"after": 10, "done": 10}
    resumed = steal(app, clock)
    again = [list(b) for b in resumed.batches(fetch, key=lambda r: r, size=10, total=25)]
    assert again == [list(range(11, 21)), list(range(21, 26))]
    final = app.get_job(job.id)
    assert final.checkpoint == {"after": 25, "done": 25}
    assert final.progress == {"done": 25, "total": 25}


def test_batches_with_a_compound_key(clocked: tuple[App, FakeClock]) -> None:
    app, clock = clocked
    app.enqueue("long")
    rows = [("a", i) for i in range(3)] + [("b", i) for i in range(3)]

    def fetch(after: list[Any] | None, n: int) -> list[tuple[str, int]]:
        return [r for r in rows if after is None or list(r) > after][:n]

    ctx = claim_ctx(app)
    for batch in ctx.batches(fetch, key=lambda r: r, size=4):
        assert batch.cursor == {"after": ["b", 0], "done": 4}
        break
    ctx.checkpoint({"after": ["b", 0], "done": 4})  # as the loop would have saved it
    resumed = steal(app, clock)
    assert [list(b) for b in resumed.batches(fetch, key=lambda r: r, size=4)] == [
        [("b", 1), ("b", 2)]]
    with pytest.raises(PayloadError, match="batch key"):
        next(iter(resumed.batches(lambda after, n: [object()], key=lambda r: r)))


def test_batches_reject_a_fetch_that_does_not_advance(clocked: tuple[App, FakeClock]) -> None:
    app, _ = clocked
    app.enqueue("long")
    ctx = claim_ctx(app)
    with pytest.raises(ConfigurationError, match="not after the cursor"):
        for _ in ctx.batches(lambda after, n: [1, 2], key=lambda r: r, size=2):
            pass
    with pytest.raises(ConfigurationError, match="size"):
        next(iter(ctx.batches(lambda after, n: [], key=lambda r: r, size=0)))
    ctx.last_checkpoint = 5  # written by hand, not by batches
    with pytest.raises(ConfigurationError, match=r"not written by ctx\.batches"):
        next(iter(ctx.batches(lambda after, n: [], key=lambda r: r)))


def test_pause_stops_claims_and_running_jobs_yield_at_a_checkpoint(
        clocked: tuple[App, FakeClock]) -> None:
    app, _ = clocked
    first = app.enqueue("long")
    ctx = claim_ctx(app)
    app.enqueue("long")
    app.pause_queue("default")
    assert app.store.jobs.claim("default", 10, "w", 30) == []
    assert [s.paused for s in app.queue_stats()] == [True]
    ctx.progress(3)  # progress alone does not yield
    with pytest.raises(JobPaused, match="paused"):
        ctx.checkpoint({"after": 3})
    job = app.get_job(first.id)
    assert job.state is JobState.AVAILABLE and job.checkpoint == {"after": 3}
    assert job.errors[-1]["kind"] == "paused"
    assert (job.max_attempts, job.counted_attempt) == (20, 0)  # the yield spent no attempt
    app.resume_queue("default")
    claimed = app.store.jobs.claim("default", 10, "w", 30)
    assert {c.id for c in claimed} >= {first.id}
    assert next(c for c in claimed if c.id == first.id).checkpoint == {"after": 3}
    assert [s.paused for s in app.queue_stats()] == [False]


def test_pause_of_a_queue_with_no_jobs_shows_in_stats(app: App) -> None:
    app.pause_queue("reports")
    assert [(s.queue, s.paused) for s in app.queue_stats()] == [("reports", True)]
    with pytest.raises(ConfigurationError):
        app.pause_queue("bad name!")


def create_notes(app: App) -> None:
    with app.store.transaction() as conn:
        conn.execute(f"CREATE TABLE {user_table(app)} (body text)")


def notes(app: App) -> list[str]:
    with app.store.transaction() as conn:
        return [r[0] for r in conn.execute(f"SELECT body FROM {user_table(app)}").fetchall()]


def test_transaction_commits_writes_key_and_checkpoint_together(
        clocked: tuple[App, FakeClock]) -> None:
    app, _ = clocked
    create_notes(app)
    job = app.enqueue("long")
    ctx = claim_ctx(app)
    calls = []

    def effect(tx: Any) -> dict[str, int]:
        calls.append(1)
        tx.execute(f"INSERT INTO {user_table(app)} VALUES ({mark(app)})", ("hello",))
        return {"n": 1}

    for _ in range(2):
        with ctx.transaction() as tx:
            result = tx.once("note:1", lambda tx=tx: effect(tx))
            tx.checkpoint({"step": 1})
            tx.progress(1, 1)
        assert result == {"n": 1}
    assert calls == [1] and notes(app) == ["hello"]
    got = app.get_job(job.id)
    assert got.checkpoint == {"step": 1} and got.progress == {"done": 1, "total": 1}
    assert ctx.last_checkpoint == {"step": 1}


def test_stale_transaction_rolls_back(clocked: tuple[App, FakeClock]) -> None:
    app, clock = clocked
    create_notes(app)
    job = app.enqueue("long")
    stale = claim_ctx(app)
    fresh = steal(app, clock)
    with pytest.raises(LeaseLost), stale.transaction() as tx:
        tx.once("note:2", lambda: tx.execute(
            f"INSERT INTO {user_table(app)} VALUES ({mark(app)})", ("stale",)) and None)
        tx.checkpoint("stale")
    assert notes(app) == [] and app.store.long_jobs.effect_keys_get("note:2") is None
    assert app.get_job(job.id).checkpoint is None
    with fresh.transaction() as tx:
        tx.once("note:2", lambda: tx.execute(
            f"INSERT INTO {user_table(app)} VALUES ({mark(app)})", ("fresh",)) and None)
    assert notes(app) == ["fresh"]


def test_error_in_transaction_rolls_back_everything(clocked: tuple[App, FakeClock]) -> None:
    app, _ = clocked
    create_notes(app)
    app.enqueue("long")
    ctx = claim_ctx(app)
    job_id = ctx.job_id
    with pytest.raises(ZeroDivisionError), ctx.transaction() as tx:
        tx.progress(5, 10)
        tx.checkpoint("never")
        tx.once("k", lambda: tx.execute(
            f"INSERT INTO {user_table(app)} VALUES ({mark(app)})", ("x",)) and 1 / 0)
    assert notes(app) == [] and app.store.long_jobs.effect_keys_get("k") is None
    ctx.flush_progress()  # the rolled-back progress is not pending either
    job = app.get_job(job_id)
    assert job.progress is None and job.checkpoint is None and ctx.last_checkpoint is None


def test_once_outside_returns_the_first_result_and_keys_expire(
        clocked: tuple[App, FakeClock]) -> None:
    app, clock = clocked
    app.enqueue("long")
    ctx = claim_ctx(app)
    calls: list[str] = []

    def charge(key: str) -> dict[str, Any]:
        calls.append(key)  # a payment API would get `key` as its idempotency key
        return {"charge": f"ch_{len(calls)}", "amount": 1200}

    key = "invoice:acme:2026-10"
    assert ctx.once(key, lambda: charge(key), keep=60) == {"charge": "ch_1", "amount": 1200}
    assert ctx.once(key, lambda: charge(key)) == {"charge": "ch_1", "amount": 1200}
    assert calls == [key]
    record = app.store.long_jobs.effect_keys_get(key)
    assert record is not None and record.job_id == ctx.job_id and record.attempt == 1
    clock.advance(30)
    assert app.store.long_jobs.effect_keys_prune() == 0
    clock.advance(31)
    assert app.store.long_jobs.effect_keys_prune() == 1
    assert app.store.long_jobs.effect_keys_get(key) is None
    with pytest.raises(ConfigurationError, match="effect key"):
        ctx.once("", lambda: 1)
    with pytest.raises(ConfigurationError, match="keep must be > 0 seconds"):
        ctx.once("k", lambda: 1, keep=0)
    with pytest.raises(PayloadError, match="result"):
        ctx.once("k2", lambda: object())


def test_worker_writes_final_progress_and_pauses_jobs(app: App) -> None:
    @app.task(queue="default")
    def counts(ctx: JobContext) -> str:
        ctx.progress(1, None, "first")
        ctx.progress(2, None, "last")  # throttled; lands when the attempt ends
        return "ok"

    job = counts.enqueue()
    with running_worker(app):
        wait_for(lambda: app.get_job(job.id).state is JobState.SUCCEEDED, what="job done")
    assert app.get_job(job.id).progress == {"done": 2, "message": "last"}


def cli(app: App, *args: str) -> Any:
    return CliRunner().invoke(main, [*args, "--dsn", app.dsn, "--schema", app.schema],
                              catch_exceptions=False)


def test_commands_pause_resume_and_show_progress(clocked: tuple[App, FakeClock],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    app, _ = clocked
    monkeypatch.setattr(cli_format.console, "width", 200)
    job = app.enqueue("long")
    ctx = claim_ctx(app)
    ctx.progress(250, 1000, "copying")
    out = cli(app, "queues", "pause", "default")
    assert out.exit_code == 0 and "paused" in out.output
    [stats] = json.loads(cli(app, "queues", "--json").stdout)
    assert stats["queue"] == "default" and stats["paused"] is True
    assert "resumed" in cli(app, "queues", "resume", "default").output
    assert json.loads(cli(app, "queues", "--json").stdout)[0]["paused"] is False
    listing = cli(app, "jobs", "list")
    assert "25% 250/1,000" in listing.output
    shown = cli(app, "jobs", "show", str(job.id))
    assert "progress: 25% 250/1,000 copying" in shown.output
    as_json = json.loads(cli(app, "jobs", "show", "--json", str(job.id)).stdout)
    assert as_json["progress"] == {"done": 250, "total": 1000, "message": "copying"}
    ctx.progress(1000, 1000, "copied")
    app.store.jobs.complete_many([Outcome(job.id, ctx.attempt, JobState.SUCCEEDED)])
    followed = cli(app, "jobs", "follow", "--interval", "0.01", str(job.id))
    assert followed.exit_code == 0 and f"job {job.id}: succeeded" in followed.output
    other = app.enqueue("long")
    app.cancel_job(other.id)
    followed = cli(app, "jobs", "follow", str(other.id))
    assert followed.exit_code == 1 and "cancelled" in followed.output
