"""The Django Tasks backend, through Django's own API: ``python manage.py test dtasks``
(DTASKS_DB=postgres for PostgreSQL). The behaviours Django's own backend tests check,
with the jobs run by a real ``manage.py shiftwork worker`` process."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

from django.db import connection, transaction
from django.test import SimpleTestCase, TransactionTestCase, override_settings
from django.utils import timezone

from dtasks import tasks as t
from dtasks.models import Ran
from shiftwork.contrib.django import get_app
from shiftwork.contrib.django.tasks_api import (
    PACKAGE,
    InvalidTask,
    InvalidTaskBackend,
    TaskResultDoesNotExist,
    TaskResultStatus,
    task_backends,
    task_enqueued,
)
from shiftwork.contrib.django.tasks_backend import ShiftworkBackend
from shiftwork.core.errors import PayloadError

if PACKAGE == "django.tasks":
    from django.tasks import default_task_backend, task
    from django.tasks.exceptions import TaskResultMismatch
else:
    from django_tasks import default_task_backend, task  # type: ignore[no-redef]
    from django_tasks.exceptions import TaskResultMismatch  # type: ignore[no-redef]

PROJECT = Path(__file__).resolve().parents[1]
BACKEND = "shiftwork.contrib.django.tasks.ShiftworkBackend"


def wait_until_finished(result: Any, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while not result.is_finished:
        if time.monotonic() > deadline:
            raise AssertionError(f"task result {result.id} still {result.status}")
        time.sleep(0.05)
        result.refresh()
    return result


class Validation(SimpleTestCase):
    """What the backend accepts, and what it refuses by name."""

    def test_the_backend_from_settings(self) -> None:
        self.assertIsInstance(task_backends["default"], ShiftworkBackend)
        self.assertEqual(default_task_backend.alias, "default")
        self.assertEqual(default_task_backend.options, {})
        self.assertEqual(task_backends["retrying"].options, {"MAX_ATTEMPTS": 3})
        for feature in ("supports_defer", "supports_async_task", "supports_get_result",
                        "supports_priority"):
            self.assertIs(getattr(default_task_backend, feature), True, feature)

    def test_bad_settings_are_refused_by_name(self) -> None:
        cases = [
            ({"OPTIONS": {"MAX_ATTEMPT": 2}}, "unknown keys ['MAX_ATTEMPT']"),
            ({"OPTIONS": {"MAX_ATTEMPTS": 0}}, "MAX_ATTEMPTS must be a whole number"),
            ({"OPTIONS": {"TIMEOUT": -1}}, "TIMEOUT"),
            ({"ENQUEUE_ON_COMMIT": True}, "unknown keys ['ENQUEUE_ON_COMMIT']"),
            ({"QUEUES": ["fine", "not a queue name!"]}, "not a queue name!"),
        ]
        for extra, message in cases:
            with self.subTest(extra), self.assertRaisesMessage(InvalidTaskBackend, message):
                ShiftworkBackend("broken", {"BACKEND": BACKEND, **extra})

    def test_djangos_own_checks_hold(self) -> None:
        with self.assertRaisesMessage(InvalidTask, "priority must be a whole number"):
            t.noop_task.using(priority=101)
        with self.assertRaisesMessage(InvalidTask, "priority must be a whole number"):
            t.noop_task.using(priority=3.1)  # type: ignore[arg-type]
        t.noop_task.using(priority=-100)
        with self.assertRaisesMessage(InvalidTask, "run_after must be an aware datetime"):
            t.noop_task.using(run_after=datetime.now())
        with self.assertRaisesMessage(InvalidTask, "Queue 'queue-2' is not valid"):
            t.noop_task.using(queue_name="queue-2")
        with self.assertRaisesMessage(InvalidTask, "defined at a module level"):
            task()(self.test_djangos_own_checks_hold)
        with self.assertRaisesMessage(InvalidTask, "first argument of 'context'"):
            task(takes_context=True)(t.calculate_meaning_of_life.func)

    def test_what_shiftwork_cannot_store_is_refused(self) -> None:
        # QUEUES [] lets any name through Django's check; shiftwork's names are stricter.
        with self.assertRaisesMessage(InvalidTask, "queue"):
            t.noop_task.using(backend="retrying", queue_name="no spaces, please")
        with self.assertRaisesMessage(InvalidTask, "run_after must be before"):
            t.noop_task.using(run_after=datetime(9999, 12, 31, 23, tzinfo=UTC))

    def test_arguments_json_cannot_hold_are_refused_at_enqueue(self) -> None:
        with self.assertRaisesMessage(TypeError, "Unsupported type"):
            t.noop_task.enqueue(datetime.now())
        # Unlike Django's in-memory backends, a call that does not fit the function is
        # refused at enqueue (a job that could only fail is never stored).
        with self.assertRaisesMessage(PayloadError, "arguments do not match"):
            t.echo.enqueue(1, 2, 3)

    def test_a_shiftwork_task_of_the_same_name_is_refused(self) -> None:
        from dtasks import clash

        with self.assertRaisesMessage(InvalidTask, "already registered"):
            task()(clash.taken)

    def test_the_system_check_wants_shiftworks_django_app(self) -> None:
        self.assertEqual(default_task_backend.check(), [])
        with self.modify_settings(INSTALLED_APPS={"remove": "shiftwork.contrib.django"}):
            [error] = default_task_backend.check()
        self.assertEqual(error.id, "shiftwork.E001")


class WithWorker(TransactionTestCase):
    """A real ``manage.py shiftwork worker`` runs the jobs, on the test database."""

    worker: ClassVar[subprocess.Popen[str]]
    log: ClassVar[Any]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        env = {**os.environ, "DTASKS_DB_NAME": str(connection.settings_dict["NAME"])}
        cls.log = tempfile.NamedTemporaryFile("w+", suffix=".log")  # noqa: SIM115
        cls.worker = subprocess.Popen(
            [sys.executable, "manage.py", "shiftwork", "worker", "--queue", "default=4",
             "--queue", "ordered=1", "--queue", "isolated=1:process"], cwd=PROJECT, env=env,
            stdout=cls.log, stderr=subprocess.STDOUT, text=True)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.worker.terminate()
        cls.worker.wait(timeout=30)
        cls.log.close()
        super().tearDownClass()

    def worker_output(self) -> str:
        self.log.seek(0)
        return str(self.log.read())

    def test_a_task_runs_and_reports_its_return_value(self) -> None:
        result = t.calculate_meaning_of_life.enqueue()
        self.assertEqual(result.status, TaskResultStatus.READY)
        self.assertIsInstance(result.id, str)
        with self.assertRaisesMessage(ValueError, "Task has not finished yet"):
            result.return_value  # noqa: B018
        wait_until_finished(result)
        self.assertEqual(result.status, TaskResultStatus.SUCCESSFUL)
        self.assertEqual(result.return_value, 42)
        self.assertEqual(result.attempts, 1)
        self.assertEqual(result.errors, [])
        self.assertGreaterEqual(result.started_at, result.enqueued_at)
        self.assertGreaterEqual(result.finished_at, result.started_at)
        self.assertEqual(result.last_attempted_at, result.started_at)
        [worker] = result.worker_ids
        self.assertTrue(worker)

    def test_arguments_and_results_are_normalized_as_django_does(self) -> None:
        result = t.echo.enqueue((1, 2), also=b"bytes")
        self.assertEqual((result.args, result.kwargs), ([[1, 2]], {"also": "bytes"}))
        self.assertEqual(wait_until_finished(result).return_value, [[1, 2], "bytes"])

    def test_async_tasks_run_on_the_workers_event_loop(self) -> None:
        for enqueued in (t.add_async.enqueue(2, b=3), t.noop_task_async.enqueue(1, two=3),
                         t.noop_task_from_bare_decorator.enqueue()):
            with self.subTest(enqueued.task.name):
                wait_until_finished(enqueued)
                self.assertEqual(enqueued.status, TaskResultStatus.SUCCESSFUL)
        self.assertEqual(t.add_async.get_result(t.add_async.enqueue(1, 1).id).args, [1, 1])

    def test_an_exception_fails_the_task_with_its_class_and_traceback(self) -> None:
        for fails, exception, message in (
                (t.failing_task_value_error, ValueError, "This Task failed due to ValueError"),
                (t.failing_task_system_exit, SystemExit, "This Task failed due to SystemExit")):
            with self.subTest(fails.name):
                result = wait_until_finished(fails.enqueue())
                self.assertEqual(result.status, TaskResultStatus.FAILED)
                with self.assertRaisesMessage(ValueError, "Task failed"):
                    result.return_value  # noqa: B018
                [error] = result.errors
                self.assertIs(error.exception_class, exception)
                self.assertTrue(error.traceback.endswith(f"{exception.__name__}: {message}\n"),
                                error.traceback)
                self.assertEqual(result.attempts, 1)
                self.assertGreaterEqual(result.finished_at, result.started_at)

    def test_a_keyboard_interrupt_or_exit_in_a_worker_fails_the_task_only(self) -> None:
        # Django's immediate backend lets a KeyboardInterrupt through to the caller; in a
        # worker there is no caller to stop: the task fails and the worker goes on.
        for fails, exception in ((t.failing_task_keyboard_interrupt, KeyboardInterrupt),
                                 (t.exit_task, SystemExit)):
            with self.subTest(fails.name):
                result = wait_until_finished(fails.enqueue())
                self.assertEqual(result.status, TaskResultStatus.FAILED)
                self.assertIs(result.errors[0].exception_class, exception)
        self.assertEqual(wait_until_finished(t.calculate_meaning_of_life.enqueue())
                         .return_value, 42)

    def test_a_timeout_fails_the_attempt(self) -> None:
        result = wait_until_finished(t.sleep_for.enqueue(5))
        self.assertEqual(result.status, TaskResultStatus.FAILED)
        [error] = result.errors
        self.assertIn("timed out", error.traceback)
        self.assertLess(result.finished_at - result.started_at, timedelta(seconds=4))

    def test_a_cancelled_task_is_failed(self) -> None:
        result = t.noop_task.using(queue_name="idle").enqueue()
        get_app().cancel_job(int(result.id))
        result.refresh()
        self.assertEqual(result.status, TaskResultStatus.FAILED)
        self.assertIsNotNone(result.finished_at)

    def test_a_task_in_a_child_process(self) -> None:
        # ":process" queues run each job in a fresh interpreter, which sets Django up
        # and imports the tasks modules itself.
        result = t.get_task_id.using(queue_name="isolated").enqueue()
        self.assertEqual(wait_until_finished(result, timeout=60).return_value, result.id)

    def test_a_complex_exception_and_a_return_value_json_cannot_hold(self) -> None:
        result = wait_until_finished(t.complex_exception.enqueue())
        self.assertIs(result.errors[0].exception_class, ValueError)
        self.assertIn('ValueError(ValueError("This task failed"))', result.errors[0].traceback)
        result = wait_until_finished(t.complex_return_value.enqueue())
        self.assertEqual(result.status, TaskResultStatus.FAILED)
        self.assertIsNone(result._return_value)
        self.assertIs(result.errors[0].exception_class, TypeError)
        self.assertIn("Unsupported type", result.errors[0].traceback)

    def test_takes_context(self) -> None:
        result = wait_until_finished(t.get_task_id.enqueue())
        self.assertEqual(result.return_value, result.id)
        result = wait_until_finished(t.test_context.enqueue(1))
        self.assertEqual(result.status, TaskResultStatus.SUCCESSFUL)

    def test_attempts_on_a_backend_that_retries(self) -> None:
        result = wait_until_finished(t.fails_twice.enqueue(), timeout=60)
        self.assertEqual(result.status, TaskResultStatus.SUCCESSFUL)
        self.assertEqual(result.return_value, 3)
        self.assertEqual(result.attempts, 3)
        self.assertEqual(result.backend, "retrying")
        self.assertEqual([e.exception_class for e in result.errors], [RuntimeError] * 2)
        self.assertIn("attempt 2 fails", result.errors[1].traceback)

    def test_run_after_defers_the_job(self) -> None:
        when = timezone.now() + timedelta(seconds=2)
        result = t.calculate_meaning_of_life.using(run_after=when).enqueue()
        self.assertEqual(result.task.run_after, when)
        time.sleep(1)
        result.refresh()
        self.assertEqual(result.status, TaskResultStatus.READY)
        wait_until_finished(result)
        self.assertGreaterEqual(result.started_at, when)
        self.assertEqual(t.calculate_meaning_of_life.get_result(result.id).task.run_after,
                         when)

    def test_priorities_order_a_queue(self) -> None:
        # One transaction, so the worker sees all four at once, and one due time in the
        # past: a SQLite claim that began before the commit and waited for the write lock
        # holds the time it began, when later ones of the four were not due yet.
        due = timezone.now() - timedelta(seconds=5)
        with transaction.atomic():
            results = [t.record.using(priority=p, run_after=due).enqueue(f"p{p}")
                       for p in (-5, 10, 0, 100)]
        for result in results:
            wait_until_finished(result)
        self.assertEqual([r.name for r in Ran.objects.order_by("id")],
                         ["p100", "p10", "p0", "p-5"])

    def test_the_worker_sends_djangos_started_and_finished_signals(self) -> None:
        ok = wait_until_finished(t.noop_task.enqueue())
        failed = wait_until_finished(t.failing_task_value_error.enqueue())
        deadline = time.monotonic() + 10
        expected = [f"Task id={ok.id} path={ok.task.module_path} state=RUNNING",
                    f"Task id={ok.id} path={ok.task.module_path} state=SUCCESSFUL",
                    f"Task id={failed.id} path={failed.task.module_path} state=FAILED"]
        while any(line not in self.worker_output() for line in expected):
            self.assertLess(time.monotonic(), deadline, self.worker_output())
            time.sleep(0.1)
        ours = [line for line in self.worker_output().splitlines() if f"id={ok.id} " in line]
        self.assertEqual(len(ours), 2, ours)
        self.assertFalse([line for line in ours if "NoneType" in line])

    def test_an_atomic_block_commits_or_rolls_back_its_jobs(self) -> None:
        sent: list[str] = []

        def said(sender: Any, task_result: Any, **_: Any) -> None:
            sent.append(task_result.id)

        task_enqueued.connect(said)
        try:
            class Refused(Exception):
                pass

            with self.assertRaises(Refused), transaction.atomic():
                t.record.enqueue("lost")
                raise Refused
            with transaction.atomic():
                kept = t.record.enqueue("kept")
                self.assertEqual(sent, [])  # said when it commits
            self.assertEqual(sent, [kept.id])
        finally:
            task_enqueued.disconnect(said)
        # (SQLite may give the rolled-back job's id to the next one: compare arguments)
        jobs = get_app().list_jobs(task=t.record.module_path)
        self.assertEqual([j.args for j in jobs], [["kept"]])
        wait_until_finished(kept)
        self.assertEqual([r.name for r in Ran.objects.all()], ["kept"])


class Results(TransactionTestCase):
    """Reading results back (on a queue no worker serves: the jobs stay READY)."""

    def test_get_result_equals_what_enqueue_returned(self) -> None:
        idle = t.echo.using(queue_name="idle", priority=7)
        result = idle.enqueue([1], also={"a": (2,)})
        again = t.echo.get_result(result.id)
        self.assertEqual(again, result)
        self.assertEqual(dataclasses.asdict(again), dataclasses.asdict(result))
        self.assertEqual((again.task.queue_name, again.task.priority), ("idle", 7))
        result.refresh()
        self.assertEqual(result.status, TaskResultStatus.READY)
        self.assertEqual(result.attempts, 0)

    def test_missing_and_foreign_results(self) -> None:
        from dtasks import clash

        plain = clash.plain.using(queue="idle").enqueue()  # a shiftwork job, not Django's
        for missing in ("123456789", "not-a-number", "-1", str(2**70), str(plain.id)):
            with self.subTest(missing), self.assertRaises(TaskResultDoesNotExist):
                default_task_backend.get_result(missing)
        with self.assertLogs(PACKAGE, "DEBUG") as logs:
            other = t.noop_task_async.using(queue_name="idle").enqueue()
        self.assertEqual(len(logs.output), 1)
        self.assertIn(f"Task id={other.id} path=dtasks.tasks.noop_task_async enqueued",
                      logs.output[0])
        with self.assertRaisesMessage(TaskResultMismatch, "Task does not match"):
            t.noop_task.get_result(other.id)

    def test_a_job_of_an_open_block_is_read_back_once_it_commits(self) -> None:
        with transaction.atomic():
            result = t.noop_task.using(queue_name="idle").enqueue()
            with self.assertRaises(TaskResultDoesNotExist):
                result.refresh()
        result.refresh()
        self.assertEqual(result.status, TaskResultStatus.READY)

    @override_settings(TASKS={"default": {"BACKEND": BACKEND, "QUEUES": ["idle"]}})
    def test_a_task_on_a_queue_the_backend_does_not_list_is_refused_at_enqueue(self) -> None:
        with self.assertRaisesMessage(InvalidTask, "Queue 'default' is not valid"):
            t.noop_task.enqueue()


class AsyncResults(TransactionTestCase):
    async def test_aenqueue_aget_result_and_arefresh(self) -> None:
        result = await t.calculate_meaning_of_life.using(queue_name="idle").aenqueue()
        self.assertEqual(result.status, TaskResultStatus.READY)
        again = await t.calculate_meaning_of_life.aget_result(result.id)
        self.assertEqual(again, result)
        await result.arefresh()
        self.assertEqual(result.status, TaskResultStatus.READY)
        with self.assertRaises(TaskResultDoesNotExist):
            await default_task_backend.aget_result("123456789")

    @override_settings(TASKS={"default": {"BACKEND": BACKEND, "QUEUES": ["idle"]}})
    async def test_validate_on_aenqueue(self) -> None:
        with self.assertRaisesMessage(InvalidTask, "Queue 'default' is not valid"):
            await t.noop_task.aenqueue()
        result = await t.get_task_id.using(queue_name="idle").aenqueue()
        self.assertEqual(result.status, TaskResultStatus.READY)
