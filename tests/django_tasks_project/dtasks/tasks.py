"""The tasks of the tests, declared with Django's own decorator (imported at start-up by
shiftwork's Django app, so the worker knows them)."""

from shiftwork.contrib.django.tasks_api import PACKAGE

if PACKAGE == "django.tasks":
    from django.tasks import TaskContext, task
else:
    from django_tasks import TaskContext, task  # type: ignore[no-redef]


@task()
def noop_task(*args: object, **kwargs: object) -> None:
    return None


@task
def noop_task_from_bare_decorator(*args: object, **kwargs: object) -> None:
    return None


@task()
async def noop_task_async(*args: object, **kwargs: object) -> None:
    return None


@task()
def calculate_meaning_of_life() -> int:
    return 42


@task()
async def add_async(a: int, b: int) -> int:
    return a + b


@task()
def echo(value: object, *, also: object = None) -> list[object]:
    return [value, also]


@task()
def failing_task_value_error() -> None:
    raise ValueError("This Task failed due to ValueError")


@task()
def failing_task_system_exit() -> None:
    raise SystemExit("This Task failed due to SystemExit")


@task()
def failing_task_keyboard_interrupt() -> None:
    raise KeyboardInterrupt("This Task failed due to KeyboardInterrupt")


@task()
def exit_task() -> None:
    exit(1)


@task(backend="bounded")
def sleep_for(seconds: float) -> None:
    import time

    time.sleep(seconds)


@task()
def complex_exception() -> None:
    raise ValueError(ValueError("This task failed"))


@task()
def complex_return_value() -> object:
    return lambda: True  # neither JSON nor anything Django can normalize


@task(takes_context=True)
def get_task_id(context: TaskContext) -> str:
    return str(context.task_result.id)


@task(takes_context=True)
def test_context(context: TaskContext, attempt: int) -> int:
    assert isinstance(context, TaskContext)
    assert context.attempt == attempt
    return int(context.attempt)


@task(takes_context=True, backend="retrying")
def fails_twice(context: TaskContext) -> int:
    if context.attempt < 3:
        raise RuntimeError(f"attempt {context.attempt} fails")
    return int(context.attempt)


@task(queue_name="ordered")
def record(name: str) -> None:
    from dtasks.models import Ran

    Ran.objects.create(name=name)
