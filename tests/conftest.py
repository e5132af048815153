"""Shared fixtures: both engines, real databases, isolation by file or by schema."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest

from shiftwork import App, FakeClock, Settings
from shiftwork.worker import Worker

PG_DSN = os.environ.get("SHIFTWORK_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
ROOT = Path(__file__).resolve().parents[1]

# The plugin's sample project runs in a pytest of its own (tests/test_pytest_plugin.py).
collect_ignore = ["plugin_sample"]

FAST = Settings(heartbeat_interval=0.5, lease_seconds=1.5, rescue_interval=0.25,
                poll_interval=0.2, leader_ttl=2.0, prune_interval=3600)


def _pg_available() -> bool:
    try:
        with psycopg.connect(PG_DSN, connect_timeout=3):
            return True
    except psycopg.OperationalError:
        return False


PG_UP = _pg_available()
#: SHIFTWORK_TEST_HISTORY=partitioned: every Postgres schema of the store contract and of
#: apps_on is converted to partitioned history after migrating, to run the whole suite
#: on it; without it, the engine postgres-partitioned does so for the contracts alone.
PARTITIONED = os.environ.get("SHIFTWORK_TEST_HISTORY") == "partitioned"


def require_pg() -> None:
    if not PG_UP:
        if IN_CI:
            pytest.fail(f"PostgreSQL at {PG_DSN} is not reachable, and CI must not skip it")
        pytest.skip(f"PostgreSQL at {PG_DSN} is not reachable")


#: Through PgBouncer (transaction mode) run the store contract and the queue contract
#: only: the rest would double the suite's Postgres time for the same statements.
PGBOUNCER_MODULES = ("tests/store_contract/", "tests/test_queue_contract.py",
                     "tests/test_fleet_pgbouncer.py")
#: On partitioned history (store/postgres/partitions.py), the same two contracts.
PARTITIONED_MODULES = ("tests/store_contract/", "tests/test_queue_contract.py")


@pytest.fixture(params=["sqlite", "postgres", "postgres-pgbouncer", "postgres-partitioned"])
def engine(request: pytest.FixtureRequest) -> str:
    if request.param.startswith("postgres"):
        require_pg()
    if request.param == "postgres-pgbouncer":
        request.getfixturevalue("pgbouncer")
    return str(request.param)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        engine = callspec.params.get("engine") if callspec is not None else None
        where = str(Path(str(item.fspath)).relative_to(ROOT))
        (dropped if (engine == "postgres-pgbouncer" and not where.startswith(PGBOUNCER_MODULES))
         or (engine == "postgres-partitioned" and not where.startswith(PARTITIONED_MODULES))
         else keep).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=_slow_first)


#: Under xdist (./dev test), the files that take longest start first, so that the short
#: ones fill in at the end: in name order the chaos files came last and one worker ran
#: them while the other sat idle. Slowest first; each file's own order is kept.
SLOW_FIRST = (
    "tests/test_workflow_chaos.py", "tests/test_packaging.py", "tests/test_schedule_chaos.py",
    "tests/test_worker_processes.py", "tests/test_composition_chaos.py",
    "tests/test_workflow_children_chaos.py", "tests/test_long_jobs_chaos.py",
    "tests/test_failover.py", "tests/test_pg_restart.py", "tests/test_pytest_plugin.py",
    "tests/test_first_contact.py", "tests/test_security_names.py", "tests/test_cli.py",
    "tests/test_chaos.py", "tests/test_fair_queues.py", "tests/test_memory_limits.py",
    "tests/test_docs.py",
)


def _slow_first(item: pytest.Item) -> int:
    where = Path(str(item.fspath)).relative_to(ROOT).as_posix()
    return SLOW_FIRST.index(where) if where in SLOW_FIRST else len(SLOW_FIRST)


def _utf8(text: str) -> str:
    """``text`` with lone surrogates escaped (as ``\\ud800``)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Iterator[pytest.TestReport]:
    """A report an xdist worker can send: execnet refuses a lone surrogate, and tests
    log some on purpose (test_job_logs: a record kept escaped), which took the whole run
    down with an INTERNALERROR."""
    report: pytest.TestReport = yield
    report.sections = [(title, _utf8(body)) for title, body in report.sections]
    if report.longrepr is not None and not isinstance(report.longrepr, tuple):
        text = str(report.longrepr)
        if _utf8(text) != text:
            report.longrepr = _utf8(text)
    return report


@pytest.fixture(scope="session")
def pgbouncer() -> Iterator[Any]:
    """A real PgBouncer (transaction mode) in front of the test server, for the session."""
    from .faults.pgbouncer import PgBouncer

    try:
        bouncer = PgBouncer(*_host_port(PG_DSN))
    except (FileNotFoundError, OSError, RuntimeError) as exc:
        if IN_CI:
            pytest.fail(f"cannot start PgBouncer, and CI must not skip it: {exc}")
        pytest.skip(f"cannot start PgBouncer: {exc}")
    yield bouncer
    bouncer.close()


def _host_port(dsn: str) -> tuple[str, int]:
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    return str(info.get("host") or "127.0.0.1"), int(info.get("port") or 5432)


def pg_dsn_for(engine: str, request: pytest.FixtureRequest) -> str:
    """The DSN an engine's stores use: the server, or PgBouncer in front of it."""
    if engine == "postgres-pgbouncer":
        dbname = psycopg.conninfo.conninfo_to_dict(PG_DSN).get("dbname") or "test"
        return str(request.getfixturevalue("pgbouncer").dsn(dbname))
    return PG_DSN


@pytest.fixture
def pg_schema() -> Iterator[str]:
    """A fresh schema's name on the test server, dropped after the test (Postgres only)."""
    require_pg()
    name = f"t_{uuid.uuid4().hex[:12]}"
    yield name
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@pytest.fixture
def db(engine: str, tmp_path: Path, request: pytest.FixtureRequest
       ) -> Iterator[dict[str, str]]:
    """Where a test's app lives: a fresh SQLite file, or a fresh Postgres schema (reached
    through PgBouncer for postgres-pgbouncer, with wake-ups LISTENed on the server)."""
    if engine == "sqlite":
        yield {"dsn": f"sqlite:///{tmp_path / 'jobs.db'}", "schema": "shiftwork"}
        return
    schema = f"t_{uuid.uuid4().hex[:12]}"
    where = {"dsn": pg_dsn_for(engine, request), "schema": schema}
    if engine == "postgres-pgbouncer":
        where |= {"pgbouncer": "1", "listen_dsn": PG_DSN}
    if engine == "postgres-partitioned":
        where |= {"partitioned": "1"}
    yield where
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@contextmanager
def apps_on(dsn: str, schema: str, pgbouncer: str = "", listen_dsn: str | None = None,
            partitioned: str = "") -> Iterator[Callable[..., App]]:
    """A maker of migrated, transition-guarded apps on ``dsn``/``schema``, closed after."""
    apps: list[App] = []

    def make(**kwargs: Any) -> App:
        kwargs.setdefault("settings", FAST)
        if pgbouncer:
            kwargs.setdefault("pgbouncer", True)
            kwargs.setdefault("listen_dsn", listen_dsn)
        app = App(dsn, schema=schema, **kwargs)
        app.migrate()
        app.store.debug_install_transition_guard()
        if (PARTITIONED or partitioned) and not dsn.startswith("sqlite"):
            app.store.partitions.convert(say=lambda _: None)
        apps.append(app)
        return app

    try:
        yield make
    finally:
        for app in apps:
            app.close()


@pytest.fixture
def make_app(db: dict[str, str]) -> Iterator[Callable[..., App]]:
    with apps_on(db["dsn"], db["schema"], db.get("pgbouncer", ""), db.get("listen_dsn"),
                 db.get("partitioned", "")) as make:
        yield make


@pytest.fixture
def clock() -> FakeClock:
    """A fake clock starting now (modules that need a fixed start define their own)."""
    return FakeClock(datetime.now(UTC))


@pytest.fixture
def wapp(make_app: Callable[..., App], clock: FakeClock) -> App:
    """An app on the fake clock (the workflow tests move time instead of sleeping)."""
    return make_app(clock=clock)


@pytest.fixture
def app(make_app: Callable[..., App]) -> App:
    return make_app()


@contextmanager
def running_worker(app: App, queues: dict[str, int] | None = None,
                   **kwargs: Any) -> Iterator[Worker]:
    """An in-process worker on a background thread, shut down on exit."""
    queues = queues or {"default": 4}
    worker = Worker(app, queues, **kwargs)
    thread = threading.Thread(target=worker.run, kwargs={"install_signals": False}, daemon=True)
    thread.start()
    assert worker.started.wait(15), "worker did not start"
    try:
        yield worker
    finally:
        worker.request_stop()
        thread.join(60)


def wait_for(predicate: Callable[[], Any], timeout: float = 20.0, interval: float = 0.02,
             what: str = "condition") -> Any:
    """Poll a condition on real state (not a sleep standing in for synchronisation)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def spawn_worker(db: dict[str, str], app_module: str, queues: list[str],
                 extra: list[str] | None = None, env: dict[str, str] | None = None,
                 log_path: Path | None = None) -> subprocess.Popen[bytes]:
    """A real worker process running ``tests/apps/<app_module>.py``."""
    cmd = [sys.executable, "-m", "shiftwork.cli", "worker", f"tests.apps.{app_module}:app",
           "--log-level", "WARNING"]
    for q in queues:
        cmd += ["-q", q]
    cmd += extra or []
    full_env = {**os.environ, "SHIFTWORK_TEST_DSN": db["dsn"],
                "SHIFTWORK_TEST_SCHEMA": db["schema"],
                "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}", **(env or {})}
    out = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115
    return subprocess.Popen(cmd, cwd=ROOT, env=full_env, stdout=out, stderr=out)


@contextmanager
def imported_app(monkeypatch: pytest.MonkeyPatch, name: str, dsn: str,
                 schema: str) -> Iterator[Any]:
    """The test app ``tests/apps/<name>.py``, imported in this process against
    ``dsn``/``schema`` (as its worker processes will be), migrated and transition-guarded."""
    import importlib

    monkeypatch.setenv("SHIFTWORK_TEST_DSN", dsn)
    monkeypatch.setenv("SHIFTWORK_TEST_SCHEMA", schema)
    sys.modules.pop(f"tests.apps.{name}", None)
    module = importlib.import_module(f"tests.apps.{name}")
    module.app.migrate()
    module.app.store.debug_install_transition_guard()
    try:
        yield module
    finally:
        module.app.close()
        sys.modules.pop(f"tests.apps.{name}", None)


@contextmanager
def recording_app(monkeypatch: pytest.MonkeyPatch, dsn: str, schema: str) -> Iterator[Any]:
    """The recording test app (tests/apps/recording.py), with its effects table."""
    with imported_app(monkeypatch, "recording", dsn, schema) as module:
        module.create_effects_table()
        yield module


@pytest.fixture
def rec_app(db: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The recording test app against the test's database."""
    with recording_app(monkeypatch, db["dsn"], db["schema"]) as module:
        yield module
