"""Settings of the example project. SHOP_DB=postgres puts it (and its jobs) on PostgreSQL
(SHOP_PG_HOST, SHOP_PG_NAME, SHOP_PG_USER), else on a SQLite file."""

import importlib.util
import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
SECRET_KEY = os.environ.get("SHOP_SECRET_KEY", "only-for-the-example-not-for-production")
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",  # the admin's CSS and scripts (served by asgi.py)
    "shiftwork.contrib.django",  # settings, tasks autodiscovery, migrate, manage.py shiftwork
    "shop",
]
if importlib.util.find_spec("django.tasks") is None:  # Django 5.2: the backport's app
    INSTALLED_APPS.append("django_tasks")
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
ROOT_URLCONF = "shop_project.urls"
TEMPLATES = [{
    "BACKEND": "django.template.backends.django.DjangoTemplates",
    "APP_DIRS": True,
    "OPTIONS": {"context_processors": [
        "django.template.context_processors.request",
        "django.contrib.auth.context_processors.auth",
        "django.contrib.messages.context_processors.messages",
    ]},
}]
USE_TZ = True
# The admin's login page logs staff in; the dashboard sends logged-out browsers there.
LOGIN_URL = "admin:login"
# The admin's own static files, served by asgi.py's static handler under uvicorn. In
# production: `manage.py collectstatic` into STATIC_ROOT, served by the web server.
STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "static"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

if os.environ.get("SHOP_DB") == "postgres":
    DATABASES = {"default": {
        "ENGINE": "django.db.backends.postgresql",
        "HOST": os.environ.get("SHOP_PG_HOST", "127.0.0.1"),
        "NAME": os.environ.get("SHOP_PG_NAME", "shop"),
        "USER": os.environ.get("SHOP_PG_USER", "postgres"),
        # The test runner's database: named per run, so runs side by side do not collide.
        "TEST": {"NAME": os.environ.get("SHOP_TEST_DB", "test_shop")},
    }}
else:
    DATABASES = {"default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("SHOP_SQLITE", str(BASE_DIR / "shop.sqlite3")),
        # shiftwork needs a file (Django's tests default to memory).
        "TEST": {"NAME": os.environ.get("SHOP_TEST_DB", str(BASE_DIR / "test_shop.sqlite3"))},
    }}

# shiftwork: which database holds the jobs, and its schema there (PostgreSQL).
# SHOP_SHIFTWORK_TESTING=inline: every job runs when its transaction commits (for tests).
SHIFTWORK = {"DATABASE": "default", "SCHEMA": "shiftwork",
             "TESTING": os.environ.get("SHOP_SHIFTWORK_TESTING") or None}

# Django's Tasks framework (@task in shop/tasks.py) on the same App, queues and workers.
TASKS = {"default": {"BACKEND": "shiftwork.contrib.django.tasks.ShiftworkBackend",
                     "QUEUES": ["default", "emails"]}}
