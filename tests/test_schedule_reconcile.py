"""The start-up reconcile on both engines: an unchanged start takes the fingerprint's fast
path and writes nothing; anything written to a definition since (a run-time add or
remove, an older shiftwork or a hand edit) sends the next start through the full
comparison; created, changed and removed schedules are written in batches."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Callable, Iterator
from dataclasses import asdict, replace
from typing import Any

import psycopg
import pytest

from shiftwork import App
from shiftwork.schedules import reconcile as reconcile_module
from shiftwork.schedules.definition import ScheduleDef
from shiftwork.schedules.reconcile import fingerprint
from shiftwork.schedules.scheduler import reconcile
from shiftwork.schedules.stored import schedules_of

from .conftest import wait_for


def noop(*args: Any) -> None:
    pass


def declare(app: App, names: list[str], cron: str = "*/5 * * * *", **policy: Any) -> None:
    task = app.tasks.get("noop") or app.task(name="noop")(noop)
    for name in names:
        app.schedule(name, cron, task, **policy)


@pytest.fixture
def queries(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The named schedule queries run, in order (to tell the fast path from the full)."""
    from shiftwork.store.postgres.schedules import PostgresSchedules
    from shiftwork.store.sqlite.schedules import SQLiteSchedules

    seen: list[str] = []
    for cls in (PostgresSchedules, SQLiteSchedules):
        original = cls.rows

        def spy(self: Any, c: Any, query: str, _original: Any = original, **params: Any
                ) -> Any:
            seen.append(query)
            return _original(self, c, query, **params)

        monkeypatch.setattr(cls, "rows", spy)
    yield seen


def full_path(seen: list[str]) -> bool:
    return "schedules_declared" in seen


def sql(db: dict[str, str], text: str) -> None:
    """A write made behind shiftwork's back (a hand edit, an older version)."""
    if db["dsn"].startswith("sqlite"):
        conn = sqlite3.connect(db["dsn"].removeprefix("sqlite:///"))
        with conn:
            conn.execute(text.replace("{schema}.", ""))
        conn.close()
        return
    with psycopg.connect(db["dsn"], autocommit=True) as c:
        c.execute(text.replace("{schema}", f'"{db["schema"]}"').encode())


def test_an_unchanged_start_reads_the_fingerprint_and_writes_nothing(
        make_app: Callable[..., App], queries: list[str]) -> None:
    app = make_app()
    declare(app, ["a", "b", "c"])
    assert reconcile(app.runtime) == {"a": "created", "b": "created", "c": "created"}
    before = {i.name: i.updated_at for i in schedules_of(app.store).overview()}
    again = make_app()  # the next worker start: the same code
    declare(again, ["c", "a", "b"])  # declared in another order: the same set
    queries.clear()
    assert reconcile(again.runtime) == {"c": "unchanged", "a": "unchanged", "b": "unchanged"}
    assert not full_path(queries)
    assert queries == ["schedules_lock_all", "schedules_reconciled_get"]
    assert {i.name: i.updated_at for i in schedules_of(app.store).overview()} == before


def test_runtime_add_and_remove_send_the_next_start_through_the_full_comparison(
        make_app: Callable[..., App], queries: list[str]) -> None:
    app = make_app()
    declare(app, ["nightly"])
    reconcile(app.runtime)
    app.schedules.add("report-acme", "0 6 * * MON", "noop")
    queries.clear()
    assert reconcile(app.runtime) == {"nightly": "unchanged"}
    assert full_path(queries)
    assert {i.name: i.origin for i in schedules_of(app.store).overview()} == {
        "nightly": "code", "report-acme": "runtime"}
    queries.clear()
    reconcile(app.runtime)
    assert not full_path(queries)  # fingerprint written again by the full pass
    app.schedules.remove("report-acme")
    queries.clear()
    assert reconcile(app.runtime) == {"nightly": "unchanged"}
    assert full_path(queries)
    # A run-time schedule that code then declares: taken over.
    app.schedules.add("weekly", "0 6 * * MON", "noop")
    later = make_app()
    declare(later, ["nightly"])
    declare(later, ["weekly"], cron="0 6 * * MON")
    # The same definition: unchanged, and code owns it from here on.
    assert reconcile(later.runtime) == {"nightly": "unchanged", "weekly": "unchanged"}
    assert schedules_of(later.store).get("weekly").origin == "code"


def test_a_pause_or_a_fire_keeps_the_fast_path(make_app: Callable[..., App],
                                               queries: list[str]) -> None:
    app = make_app()
    declare(app, ["a", "b"])
    reconcile(app.runtime)
    app.schedules.pause("a")  # the reconcile does not look at pauses
    app.schedules.trigger("b")  # nor at occurrences and cursors
    queries.clear()
    assert reconcile(app.runtime) == {"a": "unchanged", "b": "unchanged"}
    assert not full_path(queries)
    assert schedules_of(app.store).get("a").paused


@pytest.mark.parametrize("edit, expect", [
    ("UPDATE {schema}.schedules SET cron = '*/7 * * * *', definition_hash = 'old' "
     "WHERE name = 'a'", "changed"),
    ("UPDATE {schema}.schedules SET removed_at = updated_at WHERE name = 'a'", "revived"),
    ("DELETE FROM {schema}.schedules WHERE name = 'a'", "created"),
])
def test_a_write_behind_shiftworks_back_is_seen_by_the_next_start(
        make_app: Callable[..., App], db: dict[str, str], queries: list[str],
        edit: str, expect: str) -> None:
    app = make_app()
    declare(app, ["a", "b"])
    reconcile(app.runtime)
    cursor = schedules_of(app.store).get("b").next_fire_at
    sql(db, edit)
    queries.clear()
    assert reconcile(app.runtime) == {"a": expect, "b": "unchanged"}
    assert full_path(queries)
    assert schedules_of(app.store).get("a").defn == app.schedules["a"]
    assert schedules_of(app.store).get("b").next_fire_at == cursor


def test_changed_and_removed_are_found_and_written(make_app: Callable[..., App]) -> None:
    first = make_app()
    declare(first, ["same", "requeued", "retimed", "gone", "gone-too"])
    reconcile(first.runtime)
    cursors = {i.name: i.next_fire_at for i in schedules_of(first.store).overview()}
    second = make_app()
    declare(second, ["same"])
    declare(second, ["requeued"], priority=3)
    declare(second, ["retimed"], cron="0 * * * *")
    assert reconcile(second.runtime) == {"same": "unchanged", "requeued": "changed",
                                 "retimed": "changed", "gone": "removed",
                                 "gone-too": "removed"}
    infos = {i.name: i for i in schedules_of(second.store).overview(include_removed=True)}
    assert infos["requeued"].defn.priority == 3
    assert infos["requeued"].next_fire_at == cursors["requeued"]  # cursor kept
    assert infos["retimed"].next_fire_at.minute == 0  # cron changed: cursor afresh
    assert infos["gone"].removed_at is not None and infos["gone-too"].removed_at is not None
    assert infos["same"].removed_at is None
    # The first code again: the removed ones come back with a fresh cursor.
    assert reconcile(first.runtime) == {"same": "unchanged", "requeued": "changed",
                                "retimed": "changed", "gone": "revived",
                                "gone-too": "revived"}


def test_a_batch_of_created_schedules_stores_every_field(
        make_app: Callable[..., App], monkeypatch: pytest.MonkeyPatch,
        queries: list[str]) -> None:
    monkeypatch.setattr(reconcile_module, "RECONCILE_BATCH", 3)  # several batches
    app = make_app()
    task = app.task(name="noop")(noop)
    for i in range(8):
        app.schedule(f"s{i}", "30 2 * * *", task, [i, {"k": "é", "n": [1.5, None]}],
                     tz="Europe/Paris", catchup="all", catchup_window=3600, catchup_cap=7,
                     overlap="allow_all", starting_deadline=60, jitter=5,
                     expect_success_within=120, pause_on_failure=True, queue="q2",
                     priority=4)
    declare(app, ["plain"])
    queries.clear()
    report = reconcile(app.runtime)
    assert set(report.values()) == {"created"} and len(report) == 9
    assert queries.count("schedules_insert_batch") == 3
    stored = {i.name: i for i in schedules_of(app.store).overview()}
    for name, defn in app.schedules.items():
        assert stored[name].defn == defn
        assert stored[name].origin == "code"
        assert stored[name].next_fire_at == defn.cron_schedule().next_after(
            stored[name].created_at)
    # What was stored hashes as declared: a full comparison finds nothing changed.
    app.schedules.add("runtime-one", "0 6 * * MON", "noop")  # deletes the fingerprint
    queries.clear()
    assert set(reconcile(app.runtime).values()) == {"unchanged"}
    assert full_path(queries)


def test_the_definition_hash_is_the_one_stored_by_earlier_versions() -> None:
    defn = ScheduleDef(name="x", cron="*/5 * * * *", tz="Europe/Paris", task="t",
                       args_json='[1,{"a":"é"}]', queue="q", timeout=2.5, jitter=1.0)
    # Earlier versions hashed asdict less the name; fields added since (migration 0020's
    # items expectation) count only when set, so unset they are not in the body.
    later = ("name", "expect_items", "expect_items_rule", "items_rule")
    body = {k: v for k, v in asdict(defn).items() if k not in later}
    earlier = hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode())
    assert defn.definition_hash() == earlier.hexdigest()[:32]
    assert replace(defn, name="y").definition_hash() == defn.definition_hash()
    assert replace(defn, jitter=2.0).definition_hash() != defn.definition_hash()


def test_the_fingerprint_covers_every_field_and_not_the_order() -> None:
    a = ScheduleDef(name="a", cron="* * * * *", tz="UTC", task="t", args_json="[]", queue="q")
    b = replace(a, name="b")
    assert fingerprint([a, b]) == fingerprint([b, a])
    assert fingerprint([a]) != fingerprint([a, b])
    assert fingerprint([]) != fingerprint([a])
    for change in ({"cron": "*/2 * * * *"}, {"tz": "Europe/Paris"}, {"args_json": "[1]"},
                   {"queue": "r"}, {"priority": 1}, {"jitter": 0.5}, {"catchup": "all"},
                   {"overlap": "allow_all"}, {"pause_on_failure": True}, {"name": "c"}):
        assert fingerprint([replace(a, **change), b]) != fingerprint([a, b]), change


def test_a_hand_edit_during_a_reconcile_waits_and_deletes_its_fingerprint(
        make_app: Callable[..., App], db: dict[str, str], engine: str) -> None:
    if engine != "postgres":
        pytest.skip("SQLite writers cannot interleave (one write lock per transaction)")
    app = make_app()
    declare(app, ["a"])
    reconcile(app.runtime)
    schema = f'"{db["schema"]}"'
    # A reconcile in progress: the schedules' lock held, its fingerprint written, not
    # yet committed.
    with psycopg.connect(db["dsn"]) as pending:
        pending.execute("SELECT pg_advisory_xact_lock(hashtextextended('shiftwork.schedules', 0))")
        pending.execute(f"DELETE FROM {schema}.schedules_reconciled")
        pending.execute(f"INSERT INTO {schema}.schedules_reconciled VALUES (1, 'x', now())")
        with psycopg.connect(db["dsn"], autocommit=True) as edit:
            pid = edit.info.backend_pid
            done = threading.Thread(target=edit.execute, args=(
                f"UPDATE {schema}.schedules SET cron = '*/7 * * * *', definition_hash = 'old' "
                "WHERE name = 'a'",))
            done.start()
            with psycopg.connect(db["dsn"], autocommit=True) as watch:
                wait_for(lambda: watch.execute(
                    "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = %s",
                    (pid,)).fetchone() == (True,), timeout=10)
            pending.commit()
            done.join()
        left = pending.execute(f"SELECT count(*) FROM {schema}.schedules_reconciled")
        assert left.fetchone() == (0,)  # the edit came after the reconcile: not matched
    assert reconcile(app.runtime) == {"a": "changed"}
