"""shiftwork in a Django project.

1. ``INSTALLED_APPS += ["shiftwork.contrib.django"]``, and optionally
   ``SHIFTWORK = {"DATABASE": "default", "SCHEMA": "shiftwork", ...}`` (see :func:`settings`).
2. Declare tasks on the project's App, in a ``tasks.py`` of any installed app (imported at
   start-up)::

       from shiftwork.contrib.django import app

       @app.task(queue="emails")
       def send_receipt(order_id: int) -> None: ...

3. Enqueue anywhere: inside ``transaction.atomic()`` the job is inserted on Django's own
   connection and commits or rolls back with the block; outside one it commits at once.
4. ``manage.py migrate`` creates shiftwork's tables too; ``manage.py shiftwork worker``
   (or any other ``shiftwork`` command) runs against the project's App.
5. The dashboard behind Django's login: :func:`shiftwork.contrib.django.asgi.with_dashboard`.

The App is built from the project's ``DATABASES`` (PostgreSQL through psycopg 3, or
SQLite), and follows Django's test runner onto the test database.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

from shiftwork.core.errors import ConfigurationError

if TYPE_CHECKING:
    from shiftwork.app import App

DEFAULTS: dict[str, Any] = {
    "DATABASE": "default",  # which DATABASES alias holds the jobs (and whose atomic() joins)
    "SCHEMA": "shiftwork",  # PostgreSQL schema of shiftwork's tables
    "POOL_SIZE": 10,
    "ASYNC_POOL_SIZE": 4,
    "TESTING": None,  # "inline": every job runs at enqueue (for tests)
}
_lock = threading.RLock()
_app: App | None = None
_built_for: str | None = None  # the DSN the App's store was opened on


def settings() -> dict[str, Any]:
    """``settings.SHIFTWORK`` over the defaults; unknown keys are refused by name."""
    from django.conf import settings as django_settings

    given = getattr(django_settings, "SHIFTWORK", {}) or {}
    unknown = sorted(set(given) - set(DEFAULTS))
    if unknown:
        raise ConfigurationError(f"settings.SHIFTWORK: unknown keys {unknown} (known: "
                                 f"{', '.join(DEFAULTS)})")
    return {**DEFAULTS, **given}


def dsn_of(settings_dict: dict[str, Any]) -> str:
    """The shiftwork DSN of one of Django's database settings."""
    engine = settings_dict.get("ENGINE", "")
    if engine == "django.db.backends.sqlite3":
        name = str(settings_dict.get("NAME") or "")
        if not name or name == ":memory:" or name.startswith("file:"):
            raise ConfigurationError(
                f"shiftwork needs a SQLite file, and this database is {name or 'empty'!r} "
                "(for tests, set DATABASES[...]['TEST']['NAME'] to a file path)")
        return f"sqlite:///{os.path.abspath(name)}"
    if engine in ("django.db.backends.postgresql", "django.contrib.gis.db.backends.postgis"):
        from psycopg.conninfo import make_conninfo

        options = settings_dict.get("OPTIONS", {}) or {}
        parts = {"dbname": settings_dict.get("NAME") or "postgres",
                 "host": settings_dict.get("HOST") or None,
                 "port": str(settings_dict.get("PORT") or "") or None,
                 "user": settings_dict.get("USER") or None,
                 "password": settings_dict.get("PASSWORD") or None,
                 "sslmode": options.get("sslmode")}
        return make_conninfo("", **{k: v for k, v in parts.items() if v})
    raise ConfigurationError(f"shiftwork runs on PostgreSQL or SQLite; database engine "
                             f"{engine!r} is neither")


def get_app() -> App:
    """The project's App, built once from its settings (and rebound to the test database
    when Django's test runner switches to it)."""
    global _app, _built_for
    if _app is None:
        # Outside the lock: Django's set-up imports the tasks modules, which ask for the
        # App in turn (and get it built, by this function, inside the set-up).
        _ensure_django()
        with _lock:
            if _app is None:
                from django.db import connections

                from shiftwork.app import App

                conf = settings()
                dsn = dsn_of(connections[conf["DATABASE"]].settings_dict)
                app = App(dsn, schema=conf["SCHEMA"], pool_size=conf["POOL_SIZE"],
                          async_pool_size=conf["ASYNC_POOL_SIZE"], testing=conf["TESTING"])
                app.import_path = "shiftwork.contrib.django:app"
                from shiftwork.contrib.django.transactions import install

                install(app, conf["DATABASE"])
                _built_for, _app = dsn, app
    return _app


def follow_database() -> None:
    """Reopen the App's store if its Django database now points elsewhere (the test
    runner renames NAME to the test database's, then connects again)."""
    global _built_for
    if _app is None:
        return
    from django.db import connections

    from shiftwork.store import open_store

    dsn = dsn_of(connections[settings()["DATABASE"]].settings_dict)
    if dsn != _built_for:
        with _lock:
            _app.close()
            _app.dsn = dsn
            _app.runtime.dsn = dsn
            _app.runtime._store = open_store(dsn, clock=_app.clock, schema=_app.schema,
                                             pool_size=_app.pool_size,
                                             async_pool_size=_app.async_pool_size)
            _app.runtime._ready = False
            _built_for = dsn


def release_connections() -> None:
    """Close the App's connections (it opens new ones on its next use)."""
    if _app is not None:
        _app.close()


def _ensure_django() -> None:
    """A worker's child process imports the App by name: set Django up there."""
    from django.apps import apps

    if not apps.ready and not apps.loading:  # (loading: inside setup, e.g. our ready())
        import django

        django.setup()


def __getattr__(name: str) -> Any:
    if name == "app":  # ``from shiftwork.contrib.django import app``: built on first use
        return get_app()
    raise AttributeError(name)
