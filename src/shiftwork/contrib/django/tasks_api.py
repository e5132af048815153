"""Django's Tasks framework, wherever this install has it: ``django.tasks`` (Django 6 and
later) or the ``django_tasks`` backport (Django 5.2 on Python 3.11). The two have the same
classes under the same names, except the invalid-task and invalid-backend errors
(``InvalidTask`` and ``InvalidTaskBackend`` in Django, ``InvalidTaskError`` and
``InvalidTaskBackendError`` in the backport), so the backend imports them from here only."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

MISSING = ("shiftwork's Django Tasks backend needs Django's Tasks framework: Django 6 or "
           "later (django.tasks), or the django-tasks backport on Django 5.2: pip install "
           "'shiftwork[django-tasks]'")


def _first(*names: str) -> str:
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:
            continue
        return name
    raise ImportError(MISSING)


#: "django.tasks" or "django_tasks"
PACKAGE = _first("django.tasks", "django_tasks")


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"{PACKAGE}{name}")


_root = _module("")
_base = _module(".base")
_exceptions = _module(".exceptions")
_signals = _module(".signals")
_backends = _module(".backends.base")

BaseTaskBackend: Any = _backends.BaseTaskBackend
Task: Any = _base.Task
TaskContext: Any = _base.TaskContext
TaskError: Any = _base.TaskError
TaskResult: Any = _base.TaskResult
TaskResultStatus: Any = _base.TaskResultStatus
task_backends: Any = _root.task_backends
InvalidTask: type[Exception] = getattr(_exceptions, "InvalidTask", None) \
    or _exceptions.InvalidTaskError
InvalidTaskBackend: type[Exception] = getattr(_exceptions, "InvalidTaskBackend", None) \
    or _exceptions.InvalidTaskBackendError
TaskResultDoesNotExist: type[Exception] = _exceptions.TaskResultDoesNotExist
task_enqueued: Any = _signals.task_enqueued
task_started: Any = _signals.task_started
task_finished: Any = _signals.task_finished


#: Django's own JSON normalization (lists for tuples, text for bytes; a TypeError naming
#: an unsupported type), so arguments and results look as Django makes them.
normalize_json: Any = importlib.import_module(
    "django.utils.json" if PACKAGE == "django.tasks" else "django_tasks.utils").normalize_json


def refuse(message: str) -> Exception:
    """The invalid-task error Django's own backends raise, with ``message``."""
    return InvalidTask(message)

