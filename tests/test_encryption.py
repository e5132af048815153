"""Payload encryption at rest (core/crypt.py, jobs/sealing.py, jobs/reencrypt.py), on both
engines: what the row holds, what a worker and a reader see, with the key, without it,
with the wrong one, across a rotation."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from click.testing import CliRunner

from shiftwork import (
    App,
    ConfigurationError,
    EncryptionKeyError,
    EncryptionUnavailableError,
    FakeClock,
    JobContext,
    JobFailed,
    JobState,
    Keys,
    Workflow,
)
from shiftwork.cli.root import main
from shiftwork.jobs.reencrypt import reencrypt
from shiftwork.jobs.sealing import KEY_PROBLEM_DELAY
from shiftwork.testing import drain
from shiftwork.workflow.histories import read_history

from .conftest import imported_app, running_worker, wait_for

SECRET = "4111-1111-SECRET"
K1, K2, OTHER = Keys.generate(), Keys.generate(), Keys.generate()
COLUMNS = ("args", "result", "checkpoint", "progress", "errors", "unique_key")


def raw_row(app: App, job_id: int) -> dict[str, Any]:
    """The job's payload columns as the database holds them, as text."""
    with app.store.transaction() as conn:
        if app.store.engine == "sqlite":
            row = conn.execute(f"SELECT {', '.join(COLUMNS)} FROM jobs WHERE id = ?",
                               (job_id,)).fetchone()
        else:
            cols = ", ".join(f"{c}::text" for c in COLUMNS)
            row = conn.execute(f'SELECT {cols} FROM "{app.schema}".jobs WHERE id = %s',
                               (job_id,)).fetchone()
    return dict(zip(COLUMNS, row, strict=True))


def key_ids(row: dict[str, Any]) -> set[str]:
    """The key ids of every sealed value in a row's columns (envelopes at any depth)."""
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if "$enc" in value:
                found.add(value["$enc"])
            for inner in value.values():
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    for column in row.values():
        if isinstance(column, str) and column.startswith(("{", "[")):
            walk(json.loads(column))
    return found


def declare(app: App) -> dict[str, Any]:
    @app.task(name="charge", encrypt=True, max_attempts=1)
    def charge(ctx: JobContext, card: str, fail: bool = False) -> dict[str, str]:
        ctx.progress(1, 2, f"charging {card}")
        ctx.checkpoint({"card": card})
        if fail:
            raise ValueError(f"card {card} declined")
        return {"charged": card}

    @app.task(name="plain")
    def plain(card: str) -> str:
        return card

    @app.task(name="once", encrypt=True, unique=True)
    def once(card: str) -> str:
        return card

    return {"charge": charge, "plain": plain, "once": once}


@pytest.fixture
def clock() -> FakeClock:
    from datetime import UTC, datetime
    return FakeClock(datetime(2026, 1, 1, tzinfo=UTC))


@pytest.fixture
def apps(make_app: Callable[..., App], clock: FakeClock) -> Iterator[Callable[..., App]]:
    """Apps on one database, each with its own keys (or none), the tasks declared."""
    def make(keys: Keys | None) -> App:
        app = make_app(encryption=keys, clock=clock)
        if keys is not None:
            declare(app)
        else:  # the same tasks, no keys: a reader (a dashboard) without them
            app.task(name="charge")(lambda ctx, card, fail=False: None)
        return app
    yield make


def test_round_trip_through_a_worker_and_the_row_holds_no_clear_text(
        make_app: Callable[..., App]) -> None:
    app = make_app(encryption=Keys({"k1": K1}))
    tasks = declare(app)
    ok = tasks["charge"].enqueue(SECRET)
    bad = tasks["charge"].enqueue(SECRET, fail=True)
    failed: list[dict[str, Any]] = []
    app.events.subscribe(lambda name, fields: failed.append(fields) if name == "job.failed"
                         else None)
    with running_worker(app):
        assert ok.result(timeout=30) == {"charged": SECRET}
        with pytest.raises(JobFailed, match=f"card {SECRET} declined"):
            bad.result(timeout=30)
    assert [f["error"] for f in failed] == ["ValueError: encrypted"]  # logs, events: sealed
    for job_id in (ok.id, bad.id):
        row = raw_row(app, job_id)
        assert SECRET not in json.dumps(row), row
        assert json.loads(row["args"])["$enc"] == "k1"
        assert json.loads(row["checkpoint"])["$enc"] == "k1"
        progress = json.loads(row["progress"])
        assert (progress["done"], progress["total"]) == (1, 2)  # the bar stays readable
        assert progress["message"]["$enc"] == "k1"
    assert json.loads(raw_row(app, ok.id)["result"])["$enc"] == "k1"
    [error] = json.loads(raw_row(app, bad.id)["errors"])
    assert error["type"] == "ValueError" and error["message"]["$enc"] == "k1"
    # read back with the key: every value clear
    job = app.get_job(ok.id)
    assert (job.args, job.result, job.checkpoint) == ([SECRET], {"charged": SECRET},
                                                      {"card": SECRET})
    assert job.progress["message"] == f"charging {SECRET}"
    assert app.get_job(bad.id).errors[0]["message"] == f"card {SECRET} declined"
    assert SECRET in app.get_job(bad.id).errors[0]["traceback"]


def test_the_testing_tools_see_clear_arguments(make_app: Callable[..., App]) -> None:
    from shiftwork.testing import assert_enqueued, enqueued

    app = make_app(encryption=Keys({"k1": K1}))
    charge = declare(app)["charge"]
    charge.enqueue(SECRET)
    assert [j.args for j in enqueued(app, charge)] == [[SECRET]]
    assert_enqueued(charge, args=(SECRET,))


def test_a_task_not_encrypted_stays_clear(make_app: Callable[..., App]) -> None:
    app = make_app(encryption=Keys({"k1": K1}))
    job = declare(app)["plain"].enqueue(SECRET)
    drain(app)
    assert SECRET in raw_row(app, job.id)["args"] and SECRET in raw_row(app, job.id)["result"]


def test_without_the_key_reads_show_encrypted(apps: Callable[..., App]) -> None:
    writer = apps(Keys({"k1": K1}))
    handle = writer.get_task("charge").enqueue(SECRET)
    failed = writer.get_task("charge").enqueue(SECRET, fail=True)
    drain(writer)
    reader = apps(None)
    job = reader.get_job(handle.id)
    assert job.args == ["encrypted"] and job.kwargs == {}
    assert (job.result, job.checkpoint, job.progress["message"]) == ("encrypted",) * 3
    assert job.progress["done"] == 1
    assert reader.get_job(failed.id).errors[0]["message"] == "encrypted"
    assert all(SECRET not in repr(j) for j in reader.list_jobs())
    assert all(SECRET not in repr(j) for j in reader.find_jobs())
    with pytest.raises(EncryptionKeyError, match="this App has no keys"):
        reader.job(handle.id).result(timeout=5)
    wrong = apps(Keys({"k1": OTHER}))
    assert wrong.get_job(handle.id).result == "encrypted"
    with pytest.raises(EncryptionKeyError, match="does not open it"):
        wrong.job(handle.id).result(timeout=5)


def test_the_dashboard_shows_encrypted_without_the_key(apps: Callable[..., App]) -> None:
    from starlette.testclient import TestClient

    from shiftwork.web import create_dashboard

    writer = apps(Keys({"k1": K1}))
    job = writer.get_task("charge").enqueue(SECRET, fail=True)
    drain(writer)
    token = "test-token-0123456789"
    auth = {"Authorization": f"Bearer {token}"}
    for app, shown in ((apps(None), False), (writer, True)):
        client = TestClient(create_dashboard(app, token=token), base_url="http://127.0.0.1")
        page = client.get(f"/jobs/{job.id}", headers=auth)
        assert page.status_code == 200
        assert (SECRET in page.text) is shown
        assert ("encrypted" in page.text) is not shown
        for listing in (client.get("/jobs", headers=auth), client.get("/dead", headers=auth)):
            assert listing.status_code == 200 and (SECRET in listing.text) is shown
            assert "$enc" not in listing.text


def test_a_worker_with_a_wrong_key_gives_the_job_back_uncounted(
        apps: Callable[..., App], clock: FakeClock) -> None:
    writer = apps(Keys({"k1": K1}))
    handle = writer.get_task("charge").enqueue(SECRET)
    wrong = apps(Keys({"k1": OTHER}))
    result = drain(wrong)
    job = writer.get_job(handle.id)
    assert job.state is JobState.SCHEDULED and result.succeeded == 0
    assert job.counted_attempt == 0 and job.max_attempts == 1  # never dead for it
    assert job.errors[-1]["kind"] == "encryption_key"
    assert "does not open it" in job.errors[-1]["message"]
    assert SECRET not in json.dumps(raw_row(writer, handle.id))
    clock.advance(KEY_PROBLEM_DELAY + 1)
    assert drain(writer).succeeded == 1  # the right key runs it
    assert writer.get_job(handle.id).result == {"charged": SECRET}


def test_a_real_worker_missing_the_key_kills_no_job(apps: Callable[..., App]) -> None:
    writer = apps(Keys({"k1": K1}))
    handle = writer.get_task("charge").enqueue(SECRET)
    rotated_away = apps(Keys({"k2": K2}))  # k1 retired too early
    with running_worker(rotated_away):
        job = wait_for(lambda: (j := writer.get_job(handle.id)).errors and j, what="given back")
    assert job.state is JobState.SCHEDULED and job.counted_attempt == 0
    assert job.errors[-1]["kind"] == "encryption_key"
    assert "'k1', which is not among this App's keys (k2)" in job.errors[-1]["message"]


def test_chains_and_group_callbacks_of_encrypted_tasks(make_app: Callable[..., App]) -> None:
    app = make_app(encryption=Keys({"k1": K1}))

    @app.task(name="add", encrypt=True)
    def add(a: str, b: str) -> str:
        return a + b

    @app.task(name="join", encrypt=True)
    def join(sep: str, parts: list[str]) -> str:
        return sep.join(parts)

    @app.task(name="shout")  # not encrypted: given its input clear, stores its own clear
    def shout(text: str) -> str:
        return text.upper()

    chain = app.chain(add.call(SECRET, "-a"), add.call("-b"), add.call("-c"))
    group = app.group([add.call(SECRET, str(i)) for i in range(3)], then=join.call("+"))
    mixed = app.chain(add.call("se", "cret"), shout.call())
    with running_worker(app):
        assert chain.result(timeout=30) == f"-c-b{SECRET}-a"  # the input comes last
        assert group.callback is not None
        assert group.callback.result(timeout=30) == f"{SECRET}0+{SECRET}1+{SECRET}2"
        assert mixed.result(timeout=30) == "SECRET"
    for handle in [*chain.jobs, *group.jobs, group.callback]:
        assert SECRET not in json.dumps(raw_row(app, handle.id)), handle.id
    assert json.loads(raw_row(app, chain.jobs[1].id)["args"])["$enc"] == "k1"


def test_an_encrypted_workflow_seals_its_arguments_and_result_not_its_steps(
        make_app: Callable[..., App]) -> None:
    app = make_app(encryption=Keys({"k1": K1}))

    @app.workflow(name="order", encrypt=True)
    def order(wf: Workflow, card: str) -> str:
        last4 = wf.step("last4", lambda: card[-6:])
        return f"charged {card} ({last4})"

    job = order.enqueue(SECRET)
    drain(app)
    assert job.result(timeout=5) == f"charged {SECRET} (SECRET)"
    row = raw_row(app, job.id)
    assert SECRET not in row["args"] and SECRET not in row["result"]
    # a step's result is stored clear (documented: workflow_steps is not sealed)
    assert app.workflow_history(job.id)[0].result == "SECRET"
    assert read_history(app.runtime, job.id).args == [SECRET]


def test_schedule_occurrences_of_an_encrypted_task_are_sealed(
        make_app: Callable[..., App]) -> None:
    from shiftwork.schedules.scheduler import reconcile

    app = make_app(encryption=Keys({"k1": K1}))
    charge = declare(app)["charge"]
    app.schedule("in-code", "0 2 * * *", task=charge, args=[SECRET])
    reconcile(app.runtime)
    app.schedules.add("at-run-time", "0 3 * * *", charge.call(SECRET))
    before = {s.name: s for s in app.schedules.schedules_status()}
    reconcile(app.runtime)  # the definitions are stable: clear arguments, no new nonce
    assert {s.name: s for s in app.schedules.schedules_status()} == before
    ids = [app.schedules.trigger(name) for name in ("in-code", "at-run-time")]
    drain(app)
    for job_id in ids:
        assert json.loads(raw_row(app, job_id)["args"])["$enc"] == "k1"
        assert app.get_job(job_id).result == {"charged": SECRET}


def test_a_ciphertext_moved_to_another_row_does_not_open(apps: Callable[..., App]) -> None:
    app = apps(Keys({"k1": K1}))
    a, b = (app.get_task("charge").enqueue(card) for card in (SECRET, "other"))
    drain(app)
    moved = raw_row(app, a.id)["result"]
    with app.store.transaction() as conn:
        if app.store.engine == "sqlite":
            conn.execute("UPDATE jobs SET result = ? WHERE id = ?", (moved, b.id))
        else:
            conn.execute(f'UPDATE "{app.schema}".jobs SET result = %s::jsonb WHERE id = %s',
                         (moved, b.id))
    assert app.get_job(b.id).result == "encrypted"
    with pytest.raises(EncryptionKeyError, match="moved from another row"):
        b.result(timeout=5)


def test_unique_keys_still_deduplicate_as_a_keyed_digest(apps: Callable[..., App]) -> None:
    app = apps(Keys({"k1": K1}))
    once = app.get_task("once")
    first, again, other = once.enqueue(SECRET), once.enqueue(SECRET), once.enqueue("other")
    assert first.id == again.id != other.id
    by_key = [app.get_task("charge").using(key=f"order-{SECRET}").enqueue("x") for _ in "ab"]
    assert by_key[0].id == by_key[1].id
    for job_id in (first.id, by_key[0].id):
        key = raw_row(app, job_id)["unique_key"]
        assert ":hmac:" in key and SECRET not in key
    # another App with the same keys computes the same digest
    assert apps(Keys({"k1": K1})).get_task("once").enqueue(SECRET).id == first.id
    # a rotation that keeps digest_key keeps deduplicating
    rotated = apps(Keys({"k2": K2, "k1": K1}, current="k2", digest_key="k1"))
    assert rotated.get_task("once").enqueue(SECRET).id == first.id


def test_rotation_reads_old_rows_and_reencrypt_moves_them_to_the_current_key(
        apps: Callable[..., App]) -> None:
    old = apps(Keys({"k1": K1}))
    handles = [old.get_task("charge").enqueue(f"{SECRET}-{i}", fail=i == 2) for i in range(5)]
    drain(old)
    waiting = old.get_task("charge").enqueue(SECRET)  # not run yet: sealed args only
    new = apps(Keys({"k2": K2, "k1": K1}, current="k2"))
    assert new.get_job(handles[0].id).result == {"charged": f"{SECRET}-0"}  # old rows read
    fresh = new.get_task("charge").enqueue(SECRET)
    assert json.loads(raw_row(new, fresh.id)["args"])["$enc"] == "k2"
    seen: list[int] = []
    rotation = reencrypt(new.runtime, batch=2, on_batch=lambda r: seen.append(r.scanned))
    assert seen == [2, 4, 6, 7] and rotation.scanned == 7
    assert rotation.rewritten == 6 and rotation.unreadable == 0  # all but the fresh one
    for h in [*handles, waiting, fresh]:
        assert key_ids(raw_row(new, h.id)) == {"k2"}, h.id
    only_k2 = apps(Keys({"k2": K2}))
    assert only_k2.get_job(handles[1].id).result == {"charged": f"{SECRET}-1"}
    assert only_k2.get_job(handles[2].id).errors[0]["message"] == f"card {SECRET}-2 declined"
    assert only_k2.get_job(waiting.id).args == [SECRET]
    assert drain(only_k2).succeeded == 2  # waiting and fresh run with k2 alone
    again = reencrypt(new.runtime)
    assert (again.rewritten, again.values) == (0, 0)  # nothing left to move


def test_reencrypt_counts_what_no_key_opens_and_leaves_it(apps: Callable[..., App]) -> None:
    stranger = apps(Keys({"x": OTHER}))
    job = stranger.get_task("charge").enqueue(SECRET)
    before = raw_row(stranger, job.id)
    rotation = reencrypt(apps(Keys({"k2": K2})).runtime)
    assert rotation.unreadable == 1 and rotation.rewritten == 0
    assert raw_row(stranger, job.id) == before


def test_reencrypt_seals_what_was_stored_before_encryption(
        make_app: Callable[..., App]) -> None:
    before = make_app()
    before.task(name="charge")(lambda card: card)
    job = before.get_task("charge").enqueue(SECRET)
    drain(before)
    after = make_app(encryption=Keys({"k1": K1}), encrypt_all=True)
    after.task(name="charge")(lambda card: card)
    assert reencrypt(after.runtime).values == 2  # arguments and result
    assert SECRET not in json.dumps(raw_row(after, job.id))
    assert after.get_job(job.id).args == [SECRET] and after.get_job(job.id).result == SECRET


def test_the_reencrypt_command(db: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHIFTWORK_TEST_DSN", db["dsn"])
    monkeypatch.setenv("SHIFTWORK_TEST_SCHEMA", db["schema"])
    monkeypatch.setenv("SHIFTWORK_KEYS", f"k1:{K1}")
    sys.modules.pop("tests.apps.encrypted", None)
    encrypted = importlib.import_module("tests.apps.encrypted")  # this test's database

    encrypted.app.migrate()
    ids = [encrypted.charge.enqueue(f"{SECRET}{i}").id for i in range(3)]
    encrypted.app.close()
    monkeypatch.setenv("SHIFTWORK_KEYS", f"k2:{K2},k1:{K1}")
    sys.modules.pop("tests.apps.encrypted", None)
    out = CliRunner().invoke(main, ["jobs", "reencrypt", "--app", "tests.apps.encrypted:app",
                                    "--batch", "2"], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout) == {"current_key": "k2", "scanned": 3, "rewritten": 3,
                                      "values": 3, "unreadable": 0, "last_id": ids[-1]}
    assert "reencrypt: 2 jobs read" in out.stderr and "reencrypt: 3 jobs read" in out.stderr
    shown = CliRunner().invoke(main, ["jobs", "show", str(ids[0]), "--json",
                                      "--dsn", db["dsn"], "--schema", db["schema"]])
    assert shown.exit_code == 0 and "encrypted" in shown.stdout and SECRET not in shown.stdout
    sys.modules.pop("tests.apps.encrypted", None)


def test_a_child_process_seals_what_it_writes(db: dict[str, str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHIFTWORK_KEYS", f"k1:{K1}")  # the child imports the App with it
    with imported_app(monkeypatch, "encrypted", db["dsn"], db["schema"]) as module:
        app = module.app
        app.import_path = "tests.apps.encrypted:app"
        ok, bad = module.long_charge.enqueue(SECRET), module.long_charge.enqueue("fail")
        with running_worker(app, {"children": 1}, process_queues={"children"}):
            assert ok.result(timeout=60) == f"charged {SECRET}"
            with pytest.raises(JobFailed, match="declined in the child: fail"):
                bad.result(timeout=60)
        row = raw_row(app, ok.id)
        assert SECRET not in json.dumps(row)
        assert json.loads(row["checkpoint"])["$enc"] == "k1"
        assert json.loads(row["progress"])["message"]["$enc"] == "k1"
        assert "declined" not in raw_row(app, bad.id)["errors"]
        assert app.get_job(ok.id).checkpoint == {"card": SECRET}


def test_the_reencrypt_command_needs_the_app(db: dict[str, str]) -> None:
    out = CliRunner().invoke(main, ["jobs", "reencrypt", "--dsn", db["dsn"],
                                    "--schema", db["schema"]])
    assert out.exit_code == 2 and "keys" in out.output


# -- bad input, on no database -------------------------------------------------------


def test_keys_refuse_bad_rings() -> None:
    with pytest.raises(ConfigurationError, match="at least one key"):
        Keys({})
    with pytest.raises(ConfigurationError, match="must be 16, 24 or 32 bytes"):
        Keys({"k1": b"short"})
    with pytest.raises(ConfigurationError, match="not base64"):
        Keys({"k1": "!!!"})
    with pytest.raises(ConfigurationError, match="current='k9' is not one of the keys"):
        Keys({"k1": K1}, current="k9")
    with pytest.raises(ConfigurationError, match="digest_key='k9'"):
        Keys({"k1": K1}, digest_key="k9")
    with pytest.raises(ConfigurationError, match="key id"):
        Keys({" k1": K1})
    with pytest.raises(ConfigurationError, match="SHIFTWORK_KEYS is not set"):
        Keys.from_env(environ={})
    with pytest.raises(ConfigurationError, match="without a colon"):
        Keys.from_env(environ={"SHIFTWORK_KEYS": K1})
    ring = Keys.from_env(environ={"SHIFTWORK_KEYS": f"k2:{K2}, k1:{K1}"})
    assert ring.current == "k2" and ring.ids == ("k2", "k1")
    assert K1 not in repr(ring) and K2 not in repr(ring)


def test_encryption_asked_for_without_keys_is_refused(tmp_path: Any) -> None:
    app = App(f"sqlite:///{tmp_path / 'jobs.db'}")
    with pytest.raises(ConfigurationError, match="encrypt=True needs the keys"):
        app.task(encrypt=True)(lambda: None)
    with pytest.raises(ConfigurationError, match="encrypt_all=True"):
        App(f"sqlite:///{tmp_path / 'jobs.db'}", encrypt_all=True)
    with pytest.raises(ConfigurationError, match="encrypt must be True or False"):
        app.task(encrypt="yes")(lambda: None)  # type: ignore[call-overload]
    with pytest.raises(ConfigurationError, match=r"encrypt_all=\.\.\.\) must be True or False"):
        App(f"sqlite:///{tmp_path / 'jobs.db'}", encrypt_all=1)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"takes a shiftwork\.Keys"):
        App(f"sqlite:///{tmp_path / 'jobs.db'}", encryption={"k1": K1})  # type: ignore[arg-type]
    app.close()


def test_without_cryptography_the_error_says_what_to_install(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cryptography.hazmat.primitives.ciphers.aead", None)
    with pytest.raises(EncryptionUnavailableError, match=r"pip install 'shiftwork\[encryption\]'"):
        Keys({"k1": K1})


def test_cryptography_is_an_extra_not_a_dependency() -> None:
    import tomllib
    from pathlib import Path

    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]
    assert not any("cryptography" in d for d in project["dependencies"])
    assert project["optional-dependencies"]["encryption"] == ["cryptography>=42"]
