"""The first ``manage.py migrate`` creates shiftwork's tables on the project's database,
the same as ``shiftwork migrate``; reversing it leaves them (drop the schema yourself).
Django runs this once: the upgrades of later shiftwork versions are applied by the app's
``post_migrate`` handler (apps.py), at every ``manage.py migrate``."""

from __future__ import annotations

from typing import Any

from django.db import migrations


def forwards(apps: Any, schema_editor: Any) -> None:
    from shiftwork.contrib.django import follow_database, get_app

    if schema_editor.connection.alias != _alias():
        return  # another database of the project: shiftwork's tables live on one
    follow_database()
    get_app().migrate()


def _alias() -> str:
    from shiftwork.contrib.django import settings

    return str(settings()["DATABASE"])


class Migration(migrations.Migration):  # type: ignore[misc]
    # Not atomic: shiftwork migrates on its own connection, which must not wait for a
    # write lock (SQLite) held by this migration's transaction.
    atomic = False
    dependencies: list[Any] = []
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
