"""Migration 0014 (groups counted, not linked) on a database with groups in flight: the
groups written the old way (a membership row and an edge to the callback per member)
finish under the new code, each callback once, after all its members."""

from __future__ import annotations

from typing import Any

from shiftwork import App
from shiftwork.core.states import JobState
from shiftwork.model.new_job import DEPS_WAIT, NewJob

from .conftest import FAST, running_worker, wait_for

OLD_FORMAT = 13  # the last migration before groups were counted


def _old_group(app: App, members: list[int], finished: list[int], callback: int,
               on_failure: str) -> int:
    """A group as migrations 0009-0013 stored it, its finished members' edges resolved."""
    store: Any = app.runtime._store
    pg = store.engine == "postgres"
    s = f'"{app.schema}".' if pg else ""
    p = "%s" if pg else "?"
    with store.transaction() as c:
        row = c.execute(f"INSERT INTO {s}job_groups (total, callback_id, created_at) "
                        f"VALUES ({p}, {p}, {'now()' if pg else '0'}) RETURNING id",
                        (len(members), callback)).fetchone()
        group_id = int(row[0])
        for position, job_id in enumerate(members):
            c.execute(f"INSERT INTO {s}job_group_members VALUES ({p}, {p}, {p})",
                      (group_id, position, job_id))
            c.execute(f"INSERT INTO {s}job_deps (job_id, parent_id, on_failure, resolved) "
                      f"VALUES ({p}, {p}, {p}, {p})",
                      (callback, job_id, on_failure, job_id in finished))
        c.execute(f"UPDATE {s}jobs SET watched = {p} WHERE id IN ({', '.join(p for _ in members)})",
                  (True, *members))
        for job_id in finished:
            c.execute(f"UPDATE {s}jobs SET state = 'succeeded', finished_at = "
                      f"{'now()' if pg else '1'} WHERE id = {p}", (job_id,))
        c.execute(f"UPDATE {s}jobs SET deps_pending = {p} WHERE id = {p}",
                  (len(members) - len(finished), callback))
    return group_id


def test_groups_in_flight_finish_after_the_upgrade(db: dict[str, str]) -> None:
    app = App(db["dsn"], schema=db["schema"], settings=FAST, auto_migrate=False)
    try:
        @app.task(name="member", queue="default")
        def member(n: int) -> int:
            return n

        @app.task(name="fan_in", queue="default")
        def fan_in(results: list[Any]) -> int:
            return sum(r or 0 for r in results)

        store: Any = app.runtime._store
        everything = store._migrations
        store._migrations = [m for m in everything if m[0] <= OLD_FORMAT]
        store.migrate()
        groups = []
        for finished_first in (0, 2):  # none finished yet; two of four finished
            rows = [NewJob("member", "default", f'{{"args":[{i}],"kwargs":{{}}}}')
                    for i in range(1, 5)]
            ids = [r.id for r in store.jobs.insert(rows)]
            cb_meta = '{"shiftwork.input":"group"}'
            callback = store.jobs.insert([NewJob(
                "fan_in", "default", '{"args":[],"kwargs":{}}', meta_json=cb_meta,
                run_at=DEPS_WAIT)])[0].id
            groups.append((_old_group(app, ids, ids[:finished_first], callback, "run"),
                           callback))
        store._migrations = everything
        assert store.migrate() == [v for v, _, _ in everything if v > OLD_FORMAT]
        app.runtime._ready = False
        for group_id, callback in groups:
            info = app.store.deps.group_get(group_id)
            assert info.callback_id == callback
            assert app.store.deps.group_members(group_id) == sorted(app.store.deps.group_members(
                group_id)) and len(app.store.deps.group_members(group_id)) == 4
            assert app.store.deps.links_of(callback)[0] == []  # no edges left
        with running_worker(app):
            for _, callback in groups:
                assert app.wait_result(callback, timeout=30) in (10, 7)
        for _, callback in groups:
            job = app.get_job(callback)
            assert job.state is JobState.SUCCEEDED and job.attempt == 1
        wait_for(lambda: all(app.get_job(cb).finished_at is not None for _, cb in groups))
    finally:
        app.close()
