"""The Django app: imports every installed app's ``tasks`` module at start-up, keeps the
shiftwork App on the same database as Django (the test database in tests), and brings
shiftwork's tables to this version at every ``manage.py migrate``."""

from __future__ import annotations

from typing import Any

from django.apps import AppConfig


class ShiftworkConfig(AppConfig):  # type: ignore[misc]  # django has no stubs here
    name = "shiftwork.contrib.django"
    label = "shiftwork"
    verbose_name = "shiftwork"

    def ready(self) -> None:
        from django.db.backends.base.base import NO_DB_ALIAS
        from django.db.backends.signals import connection_created
        from django.db.models.signals import post_migrate
        from django.utils.module_loading import autodiscover_modules

        from shiftwork.contrib.django import follow_database, release_connections

        def follow(sender: Any, connection: Any, **_: Any) -> None:
            if connection.alias == NO_DB_ALIAS:
                # Django is about to create or drop a database (the test runner's): let
                # go of ours, or PostgreSQL refuses to drop one with sessions on it. The
                # App reconnects on its next use.
                release_connections()
            else:
                follow_database()

        connection_created.connect(follow, weak=False, dispatch_uid="shiftwork-follow")
        post_migrate.connect(upgrade, sender=self, weak=False, dispatch_uid="shiftwork-upgrade")
        autodiscover_modules("tasks")  # tasks declared with @app.task register now


def upgrade(sender: Any, using: str = "default", **_: Any) -> None:
    """After every ``manage.py migrate``: apply shiftwork's own migrations. Django runs the
    ``RunPython`` migration once, on the first migrate; an upgraded shiftwork brings new
    schema versions that only this applies (a no-op when the schema is up to date)."""
    from shiftwork.contrib.django import follow_database, get_app, settings

    if using != str(settings()["DATABASE"]):
        return  # another database of the project: shiftwork's tables live on one
    follow_database()
    get_app().migrate()
