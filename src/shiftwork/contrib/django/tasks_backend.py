"""``ShiftworkBackend``: Django's Tasks framework on the project's shiftwork App.

A Django task's job is a shiftwork job of the task registered under its module path, on
the queue named by its ``queue_name``, with its ``priority`` (the same -100..100, higher
first) and its ``run_after`` as the job's ``run_at``; inside ``transaction.atomic()`` on
shiftwork's database it commits or rolls back with the block. Results are read back from
the job (``get_result``, ``refresh``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from shiftwork.contrib.django import tasks_api as api
from shiftwork.contrib.django.tasks_results import META_KEY, is_django_task, result_of
from shiftwork.contrib.django.tasks_runner import registered
from shiftwork.core.bounds import MAX_ATTEMPTS, MAX_ID, instant, seconds, whole
from shiftwork.core.errors import ConfigurationError, JobNotFoundError
from shiftwork.core.names import check_queue

#: OPTIONS and their defaults. One attempt: a task that raises is FAILED, as with
#: Django's own backends; more retry it after shiftwork's backoff.
OPTIONS: dict[str, Any] = {"MAX_ATTEMPTS": 1, "TIMEOUT": None}
_SETTINGS = {"BACKEND", "QUEUES", "OPTIONS"}


class ShiftworkBackend(api.BaseTaskBackend):  # type: ignore[misc]  # (Django has no stubs)
    """``TASKS = {"default": {"BACKEND": "shiftwork.contrib.django.tasks.ShiftworkBackend",
    "QUEUES": ["default", "emails"], "OPTIONS": {"MAX_ATTEMPTS": 3, "TIMEOUT": 60}}}``.

    ``QUEUES``: the queue names tasks may use (an empty list: any name shiftwork accepts);
    ``MAX_ATTEMPTS``: attempts per job (1); ``TIMEOUT``: seconds per attempt (None)."""

    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        where = f"TASKS[{alias!r}]"
        unknown = sorted(set(params) - _SETTINGS)
        if unknown:
            raise api.InvalidTaskBackend(f"{where}: unknown keys {unknown} (known: "
                                         f"{', '.join(sorted(_SETTINGS))})")
        unknown = sorted(set(self.options) - set(OPTIONS))
        if unknown:
            raise api.InvalidTaskBackend(f"{where}['OPTIONS']: unknown keys {unknown} "
                                         f"(known: {', '.join(OPTIONS)})")
        options = {**OPTIONS, **self.options}
        try:
            for queue in sorted(self.queues):
                check_queue(queue)
            self.max_attempts = whole(options["MAX_ATTEMPTS"], f"{where}: MAX_ATTEMPTS", 1,
                                      MAX_ATTEMPTS)
            self.timeout = None if options["TIMEOUT"] is None else seconds(
                options["TIMEOUT"], f"{where}: TIMEOUT", allow_zero=False)
        except ConfigurationError as exc:
            raise api.InvalidTaskBackend(f"{where}: {exc}") from None

    def validate_task(self, task: Any) -> None:
        """Django's checks, then shiftwork's (a queue name it can store, a ``run_after``
        in range); a valid task is registered on the App, so workers know it."""
        super().validate_task(task)
        try:
            check_queue(task.queue_name)
            if task.run_after is not None:
                instant(_aware(task.run_after), f"{task.module_path}: run_after")
        except ConfigurationError as exc:
            raise api.refuse(str(exc)) from None
        registered(_app(), task, self.timeout)

    def enqueue(self, task: Any, args: Any, kwargs: Any) -> Any:
        from django.db import transaction
        from django.utils import timezone

        from shiftwork.contrib.django import settings

        self.validate_task(task)
        # Django's normalization first: the same TypeError for what JSON cannot hold.
        args, kwargs = api.normalize_json(list(args)), api.normalize_json(dict(kwargs))
        now = timezone.now()
        run_after = _aware(task.run_after) if task.run_after is not None else None
        meta = {META_KEY: {"path": task.module_path, "backend": self.alias,
                           "run_after": task.run_after.isoformat() if task.run_after else None,
                           "enqueued_at": now.isoformat()}}
        job = registered(_app(), task, self.timeout).using(
            queue=task.queue_name, priority=task.priority, run_at=run_after,
            max_attempts=self.max_attempts, meta=meta).enqueue(*args, **kwargs)
        result = api.TaskResult(
            task=task, id=str(job.id), status=api.TaskResultStatus.READY, enqueued_at=now,
            started_at=None, last_attempted_at=None, finished_at=None, args=args,
            kwargs=kwargs, backend=self.alias, errors=[], worker_ids=[])
        # Said when the job exists for others: at once, or when the block commits.
        transaction.on_commit(
            lambda: api.task_enqueued.send(type(self), task_result=result),
            using=settings()["DATABASE"])
        return result

    def get_result(self, result_id: str) -> Any:
        """The job's result now. A job enqueued inside ``atomic()`` is not found until the
        block commits (the App reads on its own connection, either engine)."""
        try:
            job_id = whole(int(result_id), "result id", 1, MAX_ID)
            job = _app().get_job(job_id)
        except (ValueError, TypeError, ConfigurationError, JobNotFoundError):
            raise api.TaskResultDoesNotExist(result_id) from None
        if not is_django_task(job):
            raise api.TaskResultDoesNotExist(f"{result_id} (a shiftwork job, not a Django "
                                             "task's)")
        return result_of(job)

    def check(self, **kwargs: Any) -> list[Any]:
        from django.apps import apps
        from django.core import checks

        if apps.is_installed("shiftwork.contrib.django"):
            return []
        return [checks.Error(
            "shiftwork's Django Tasks backend needs 'shiftwork.contrib.django' in "
            "INSTALLED_APPS: it builds the App from DATABASES and imports every app's "
            "tasks module in workers, which registers the Django tasks they run",
            id="shiftwork.E001")]


def _app() -> Any:
    from shiftwork.contrib.django import get_app

    return get_app()


def _aware(when: datetime) -> datetime:
    """A naive ``run_after`` (``USE_TZ = False``) in Django's current time zone."""
    from django.utils import timezone

    return timezone.make_aware(when) if timezone.is_naive(when) else when
