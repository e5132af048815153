"""Settings of the Django Tasks backend's test project. DTASKS_DB=postgres: PostgreSQL
(DTASKS_PG_HOST, DTASKS_PG_NAME, DTASKS_PG_USER), else a SQLite file (DTASKS_SQLITE).
DTASKS_TEST_DB names the test runner's database; a worker started by the tests gets
DTASKS_DB_NAME, the test database itself."""

import importlib.util
import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
SECRET_KEY = "only-for-the-tests"
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "shiftwork.contrib.django",
    "dtasks",
]
if importlib.util.find_spec("django.tasks") is None:  # Django 5.2: the backport
    INSTALLED_APPS.insert(0, "django_tasks")

if os.environ.get("DTASKS_DB") == "postgres":
    DATABASES = {"default": {
        "ENGINE": "django.db.backends.postgresql",
        "HOST": os.environ.get("DTASKS_PG_HOST", "127.0.0.1"),
        "NAME": os.environ.get("DTASKS_DB_NAME") or os.environ.get("DTASKS_PG_NAME", "test"),
        "USER": os.environ.get("DTASKS_PG_USER", "postgres"),
        "TEST": {"NAME": os.environ.get("DTASKS_TEST_DB", "test_dtasks")},
    }}
else:
    DATABASES = {"default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("DTASKS_DB_NAME")
        or os.environ.get("DTASKS_SQLITE", str(BASE_DIR / "dtasks.sqlite3")),
        "TEST": {"NAME": os.environ.get("DTASKS_TEST_DB",
                                        str(BASE_DIR / "test_dtasks.sqlite3"))},
    }}

TASKS = {
    "default": {
        "BACKEND": "shiftwork.contrib.django.tasks.ShiftworkBackend",
        # "idle": a queue no test worker serves, where jobs stay READY
        "QUEUES": ["default", "ordered", "idle", "isolated"],
    },
    "retrying": {
        "BACKEND": "shiftwork.contrib.django.tasks.ShiftworkBackend",
        "QUEUES": [],
        "OPTIONS": {"MAX_ATTEMPTS": 3},
    },
    "bounded": {
        "BACKEND": "shiftwork.contrib.django.tasks.ShiftworkBackend",
        "OPTIONS": {"TIMEOUT": 0.5},
    },
}

