"""The jobs table's own health (issue 31): dead tuples, what holds vacuum back, index
bloat on real Postgres; free pages and the WAL file on real SQLite files; in `shiftwork
health`, the metrics (cached) and the dashboard; the tuning migration 0028."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner

from shiftwork import App, ConfigurationError, FakeClock, Settings
from shiftwork.cli import main as shiftwork_cli
from shiftwork.model.table_health import VacuumHolder
from shiftwork.observe import check_health
from shiftwork.observe.metrics import Metrics
from shiftwork.observe.table_health import holder_problem
from shiftwork.store.postgres.table_health import read_table_health

from .conftest import FAST, PG_DSN, apps_on, require_pg, wait_for

_IGNORE_HOLDERS: dict[str, Any] = {
    "xmin_age_warning": 1e6, "xmin_age_unhealthy": 1e6, "xmin_xids_warning": 2**40,
    "xmin_xids_unhealthy": 2**40}


def _settings(**changes: Any) -> Settings:
    return dataclasses.replace(FAST, **changes)


@pytest.fixture
def pg_apps() -> Iterator[tuple[Callable[..., App], str]]:
    """Apps on a fresh schema of the test server, and that schema."""
    require_pg()
    schema = f"t_{uuid.uuid4().hex[:12]}"
    try:
        with apps_on(PG_DSN, schema) as make:
            yield make, schema
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _kinds(problems: list[Any]) -> list[str]:
    return [p.kind for p in problems]


def _dead_tuples(app: App) -> int:
    return app.store.table_health().dead_tuples or 0


def test_dead_tuples_turn_health_to_warning_then_unhealthy_and_vacuum_clears_them(
        pg_apps: tuple[Callable[..., App], str]) -> None:
    make, schema = pg_apps
    # Another session on the shared server may hold the horizon: not this test's subject.
    app = make(settings=_settings(table_dead_min=100, **_IGNORE_HOLDERS))

    @app.task
    def noop(i: int) -> None: ...

    noop.enqueue_many([(i,) for i in range(1000)])
    # The inserting backend flushes its counts once idle, within a second or so.
    wait_for(lambda: app.store.table_health().live_tuples == 1000, what="1000 live tuples")
    with psycopg.connect(PG_DSN, autocommit=True) as c:
        # No autovacuum on this schema's table: the dead rows stay until we vacuum.
        c.execute(f'ALTER TABLE "{schema}".jobs SET (autovacuum_enabled = off)')
        c.execute(f'DELETE FROM "{schema}".jobs WHERE id % 10 < 3')
        c.execute("SELECT pg_stat_force_next_flush()")  # counted at once, not within 1 s
    wait_for(lambda: _dead_tuples(app) >= 300, what="300 dead tuples counted")
    report = check_health(app, require_worker=False)
    assert report.ok and report.status == "warning", (report.problems, report.table)
    [dead] = [p for p in report.warnings if p.kind == "table_dead_tuples"]
    assert "300 dead tuples, 30% of its rows (700 live)" in dead.message

    with psycopg.connect(PG_DSN, autocommit=True) as c:
        c.execute(f'DELETE FROM "{schema}".jobs WHERE id % 10 < 7')
        c.execute("SELECT pg_stat_force_next_flush()")
    wait_for(lambda: _dead_tuples(app) >= 700, what="700 dead tuples counted")
    report = check_health(app, require_worker=False)
    assert "table_dead_tuples" in _kinds(report.problems) and not report.ok

    def vacuumed() -> bool:
        # Again until it can: a snapshot another session on the shared server held when
        # it ran leaves the rows deleted after it "recently dead", kept and still counted.
        with psycopg.connect(PG_DSN, autocommit=True) as c:
            c.execute(f'VACUUM "{schema}".jobs')
        return _dead_tuples(app) < 100

    wait_for(vacuumed, timeout=60, interval=0.5, what="a vacuum that removed them")
    report = check_health(app, require_worker=False)
    assert "table_dead_tuples" not in _kinds(report.problems + report.warnings)
    assert report.table is not None and report.table.last_vacuum is not None


def test_an_open_transaction_holding_the_horizon_is_named_until_it_ends(
        pg_apps: tuple[Callable[..., App], str]) -> None:
    make, _ = pg_apps
    app = make(settings=_settings(xmin_age_warning=0.5))
    holder = psycopg.connect(PG_DSN, application_name="nightly-export")
    try:
        holder.execute("SELECT pg_current_xact_id()")  # a txid assigned, left idle in it
        pid = holder.info.backend_pid

        def named() -> Any:
            report = check_health(app, require_worker=False)
            return [p for p in report.warnings if p.kind == "xmin_horizon"
                    and p.subject == str(pid)] and report

        report = wait_for(named, what=f"a warning naming pid {pid}")
        [problem] = [p for p in report.warnings if p.subject == str(pid)]
        assert report.ok and problem.severity == "warning"  # warnings do not fail a probe
        assert f"pid {pid} (nightly-export), idle in transaction" in problem.message
        assert f"pg_terminate_backend({pid})" in problem.message
        [held] = [h for h in report.table.holders if h.pid == pid]
        assert held.kind == "transaction" and held.query_start is not None
        assert held.age_seconds is not None and held.age_seconds > 0.5

        # The metrics see it too: the horizon's age is at least this transaction's.
        body = Metrics(app).exposition().decode()
        age = float(next(line.split()[1] for line in body.splitlines()
                         if line.startswith("shiftwork_xmin_horizon_age_seconds ")))
        assert age > 0.5
    finally:
        holder.rollback()
        holder.close()
    wait_for(lambda: not [p for p in check_health(app, require_worker=False).warnings
                          if p.subject == str(pid)], what="the warning gone")


def test_an_old_transaction_is_unhealthy_past_the_second_threshold(
        pg_apps: tuple[Callable[..., App], str]) -> None:
    make, _ = pg_apps
    app = make(settings=_settings(xmin_age_warning=0.2, xmin_age_unhealthy=0.4))
    with psycopg.connect(PG_DSN) as holder:
        holder.execute("SELECT pg_current_xact_id()")
        pid = holder.info.backend_pid
        report = wait_for(lambda: (r := check_health(app, require_worker=False)) and [
            p for p in r.problems if p.subject == str(pid)] and r, what="unhealthy")
        assert not report.ok and report.status == "unhealthy"
        holder.rollback()


def test_the_health_read_touches_the_catalogs_only(
        pg_apps: tuple[Callable[..., App], str]) -> None:
    make, schema = pg_apps
    app = make()

    @app.task
    def noop(i: int) -> None: ...

    noop.enqueue_many([(i,) for i in range(300)])
    with psycopg.connect(PG_DSN) as c:  # one transaction: its own scans are counted in it
        health = read_table_health(c, app.store.q)
        row = c.execute("SELECT coalesce(seq_scan, 0), coalesce(idx_scan, 0) FROM "
                        "pg_stat_xact_user_tables WHERE relid = %s::regclass",
                        (f'"{schema}".jobs',)).fetchone()
    assert row == (0, 0)  # neither the table nor any of its indexes was read
    assert {"jobs_pkey", "jobs_claim_idx"} <= {ix.name for ix in health.indexes}


def test_index_bloat_is_estimated_from_the_catalog(
        pg_apps: tuple[Callable[..., App], str]) -> None:
    make, schema = pg_apps
    app = make(settings=_settings(index_bloat_min_bytes=0, **_IGNORE_HOLDERS))

    @app.task
    def noop(i: int) -> None: ...

    noop.enqueue_many([(i,) for i in range(20000)])
    with psycopg.connect(PG_DSN, autocommit=True) as c:
        c.execute(f'ANALYZE "{schema}".jobs')
    packed = {ix.name: ix for ix in app.store.table_health().indexes}
    assert packed["jobs_pkey"].bloat_ratio is not None and packed["jobs_pkey"].bloat_ratio < 0.1
    assert packed["jobs_tags_idx"].bloat_bytes is None  # a GIN index: no estimate
    assert "index_bloat" not in _kinds(check_health(app, require_worker=False).warnings)
    with psycopg.connect(PG_DSN, autocommit=True) as c:
        c.execute(f'DELETE FROM "{schema}".jobs WHERE id % 10 <> 0')
        c.execute(f'VACUUM ANALYZE "{schema}".jobs')  # the index keeps its emptied pages
    bloated = {ix.name: ix for ix in app.store.table_health().indexes}
    assert (bloated["jobs_pkey"].bloat_ratio or 0) > 0.8
    warnings = check_health(app, require_worker=False).warnings
    assert "jobs_pkey" in [p.subject for p in warnings if p.kind == "index_bloat"]


def test_migration_0028_sets_the_queue_tables_storage_parameters(
        pg_apps: tuple[Callable[..., App], str]) -> None:
    make, schema = pg_apps
    make()
    with psycopg.connect(PG_DSN) as c:
        options = dict(c.execute(
            "SELECT c.relname, c.reloptions FROM pg_class c JOIN pg_namespace n ON "
            "n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'",
            (schema,)).fetchall())
    assert {"autovacuum_vacuum_scale_factor=0.01", "autovacuum_vacuum_threshold=1000",
            "autovacuum_analyze_scale_factor=0.02", "fillfactor=90"} <= set(options["jobs"])
    for table in ("workers", "leaders", "rate_buckets", "fair_cursors"):
        assert options[table] == ["fillfactor=50"], table


def test_health_json_and_text_show_the_table_on_postgres(
        pg_apps: tuple[Callable[..., App], str]) -> None:
    make, schema = pg_apps
    make()  # migrated
    base = ["--dsn", PG_DSN, "--schema", schema, "--no-worker-ok"]
    out = CliRunner().invoke(shiftwork_cli, ["health", *base, "--json"])
    assert out.exit_code == 0, out.output
    table = json.loads(out.stdout)["table"]
    assert table["engine"] == "postgres" and table["dead_tuples"] == 0
    assert {"jobs_pkey", "jobs_claim_idx"} <= {ix["name"] for ix in table["indexes"]}
    text = CliRunner().invoke(shiftwork_cli, ["health", *base]).stdout
    assert "table jobs: 0 live, 0 dead tuples" in text
    assert "indexes (bloat estimated from the catalog): " in text


# -- SQLite ---------------------------------------------------------------------------

@contextmanager
def _sqlite_app(tmp_path: Path, **settings: Any) -> Iterator[App]:
    with apps_on(f"sqlite:///{tmp_path / 'jobs.db'}", "shiftwork") as make:
        yield make(settings=_settings(**settings))


def test_sqlite_reports_free_pages_and_the_wal_file(tmp_path: Path) -> None:
    with _sqlite_app(tmp_path, sqlite_min_bytes=0, sqlite_free_ratio_warning=0.3,
                     sqlite_wal_bytes_warning=1) as app:
        @app.task
        def noop(blob: str) -> None: ...

        noop.enqueue_many([("x" * 2000,) for _ in range(2000)])
        before = app.store.table_health()
        assert before.engine == "sqlite" and before.page_count and before.page_count > 500
        assert before.wal_bytes and before.wal_bytes > 0
        assert set(before.not_measured) >= {"dead tuples", "xmin horizon", "checkpoint lag"}
        with sqlite3.connect(tmp_path / "jobs.db", isolation_level=None) as c:
            c.execute("DELETE FROM jobs")
        after = app.store.table_health()
        assert after.free_pages and after.free_pages > 0.5 * after.page_count
        report = check_health(app, require_worker=False)
        assert report.ok and {"sqlite_free_pages", "sqlite_wal"} <= set(_kinds(report.warnings))


def test_sqlite_health_text_says_what_is_not_on_sqlite(tmp_path: Path) -> None:
    with _sqlite_app(tmp_path):
        dsn = f"sqlite:///{tmp_path / 'jobs.db'}"
        out = CliRunner().invoke(shiftwork_cli, ["health", "--dsn", dsn, "--no-worker-ok"])
        assert out.exit_code == 0, out.output
        assert "database file: " in out.stdout and "pages free" in out.stdout
        assert "not on SQLite: dead tuples, index bloat, vacuum, xmin horizon" in out.stdout
        data = json.loads(CliRunner().invoke(
            shiftwork_cli, ["health", "--dsn", dsn, "--no-worker-ok", "--json"]).stdout)
        assert data["table"]["engine"] == "sqlite" and data["table"]["free_pages"] == 0
        assert data["status"] == "ok" and data["warnings"] == []


def test_the_metrics_scrape_reads_the_table_health_once_a_period(tmp_path: Path) -> None:
    clock = FakeClock()
    with apps_on(f"sqlite:///{tmp_path / 'jobs.db'}", "shiftwork") as make:
        app = make(clock=clock, settings=_settings(table_health_every=30))
        reads = []
        real = app.store.table_health
        app.store.table_health = lambda: reads.append(1) or real()  # type: ignore[method-assign]
        metrics = Metrics(app)
        body = metrics.exposition().decode()
        assert 'shiftwork_sqlite_pages{kind="free"} 0.0' in body
        assert "shiftwork_sqlite_wal_bytes" in body
        metrics.exposition()
        clock.advance(29)
        metrics.exposition()
        assert len(reads) == 1
        clock.advance(2)
        metrics.exposition()
        assert len(reads) == 2


def test_the_dashboard_shows_the_jobs_table(pg_apps: tuple[Callable[..., App], str],
                                            tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from shiftwork.web import create_dashboard

    make, _ = pg_apps
    with _sqlite_app(tmp_path) as lite:
        for app in (make(), lite):
            web = create_dashboard(app, authenticate=lambda r: True)
            page = TestClient(web, base_url="http://127.0.0.1").get("/")
            assert page.status_code == 200 and "<h2>Jobs table</h2>" in page.text
            if app.store.engine == "postgres":
                assert "jobs_claim_idx" in page.text and "xmin horizon held by" in page.text
            else:
                assert "Not on SQLite" in page.text


def test_slots_and_prepared_transactions_are_judged_by_their_age_in_transactions() -> None:
    s = Settings(xmin_xids_warning=1000, xmin_xids_unhealthy=5000)
    slot = VacuumHolder("replication_slot", 2000, None, pid=None, name="standby_b")
    problem = holder_problem(s, slot)
    assert problem is not None and problem.severity == "warning"
    assert problem.subject == "standby_b"
    assert "replication slot standby_b, inactive holds back the xmin horizon (2000 " \
           "transactions old)" in problem.message and "drop the slot" in problem.message
    logical = dataclasses.replace(slot, xid_age=6000, catalog_only=True)
    problem = holder_problem(s, logical)
    assert problem is not None and problem.severity == "unhealthy"
    assert "the system catalogs' dead rows" in problem.message
    prepared = VacuumHolder("prepared", 10, 7200.0, name="tx-42")
    problem = holder_problem(s, prepared)  # young in transactions, two hours old
    assert problem is not None and problem.severity == "unhealthy"
    assert "ROLLBACK PREPARED 'tx-42'" in problem.message
    assert holder_problem(s, dataclasses.replace(prepared, age_seconds=1.0)) is None


@pytest.mark.parametrize(("changes", "message"), [
    ({"table_dead_ratio_warning": 0}, "table_dead_ratio_warning must be a share in"),
    ({"index_bloat_warning": 1.5}, "index_bloat_warning must be a share in"),
    ({"table_dead_ratio_warning": float("nan")}, "table_dead_ratio_warning must be a share"),
    ({"xmin_age_warning": 600, "xmin_age_unhealthy": 60}, "xmin_age_warning (600) must not"),
    ({"xmin_xids_warning": -1}, "xmin_xids_warning must be a whole number"),
    ({"table_health_every": 0}, "table_health_every"),
])
def test_bad_thresholds_are_refused_by_name(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Settings(**changes)


def test_a_plugged_in_warning_is_reported_and_the_report_stays_ok(tmp_path: Path) -> None:
    from shiftwork.observe import Problem

    with _sqlite_app(tmp_path) as app:
        app.observers.health_checks.append(
            lambda app: [Problem("disk", "spool", "spool 80% full", severity="warning")])
        report = check_health(app, require_worker=False)
        assert report.ok and report.status == "warning" and report.problems == []
        assert [p.kind for p in report.warnings] == ["disk"]
