"""Django's Tasks framework on shiftwork (Django 6's ``django.tasks``, or the
``django-tasks`` backport on Python 3.11): ``pip install 'shiftwork[django-tasks]'``, then

    TASKS = {"default": {"BACKEND": "shiftwork.contrib.django.tasks.ShiftworkBackend"}}

The class loads on first use: shiftwork's Django app imports every installed app's
``tasks`` module at start-up, this one included, and a project without Django Tasks must
still start.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "ShiftworkBackend":
        from shiftwork.contrib.django.tasks_backend import ShiftworkBackend

        return ShiftworkBackend
    raise AttributeError(name)
