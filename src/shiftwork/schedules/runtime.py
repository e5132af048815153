"""Building a run-time schedule (``app.schedules.add``) from a task call, with the checks
a declaration in code gets (cron, zone, arguments, policies) plus the ones only run time
needs (a registered task, a name code does not own)."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from shiftwork.core.errors import ConfigurationError, UnknownTaskError
from shiftwork.core.names import check_schedule_name
from shiftwork.jobs.task import EnqueueOptions, JobRequest
from shiftwork.schedules.definition import ScheduleDef, declare_schedule
from shiftwork.schedules.origin import ScheduleNameTaken

if TYPE_CHECKING:
    from shiftwork.registry import Registry

#: The policy options ``add`` accepts, as ``app.schedule`` does (docs/scheduling-policies.md).
POLICIES = frozenset(p for p in inspect.signature(declare_schedule).parameters
                     if p not in ("name", "cron", "task", "job"))


def runtime_def(registry: Registry, declared: dict[str, ScheduleDef], name: str, cron: str,
                call: JobRequest | str, args: tuple[Any, ...] | list[Any] = (),
                kwargs: dict[str, Any] | None = None, queue: str | None = None,
                priority: int | None = None, **policy: Any) -> ScheduleDef:
    """The definition ``app.schedules.add`` stores; raises naming what is wrong."""
    check_schedule_name(name)  # first: every message below names it
    if name in declared:
        raise ScheduleNameTaken(f"schedule {name!r} is declared in code; pick another name "
                                "for a run-time schedule")
    unknown = sorted(set(policy) - POLICIES)
    if unknown:
        raise ConfigurationError(f"schedule {name}: unknown option(s) {', '.join(unknown)} "
                                 f"(known: {', '.join(sorted(POLICIES))}, queue, priority)")
    rule = policy.get("expect_items")
    if callable(rule) and not isinstance(rule, type):
        raise ConfigurationError(f"schedule {name}: a run-time schedule is stored by value, "
                                 "so expect_items must be a whole number of items here; "
                                 "declare a schedule whose rule is a callable in code "
                                 "(app.schedule)")
    if isinstance(call, JobRequest):
        if args or kwargs:
            raise ConfigurationError(f"schedule {name}: give the arguments in the call "
                                     "(task.call(...)), not also as args=/kwargs=")
        task, args, kwargs = call.task, call.args, call.kwargs
        opts = call.options
        if registry.tasks.get(task.name) is not task:
            raise UnknownTaskError(f"schedule {name}: task {task.name!r} is not registered "
                                   "on this app")
    elif isinstance(call, str):
        task, opts = registry.get_task(call), EnqueueOptions()
    else:
        raise ConfigurationError(f"schedule {name}: expected task.call(...) or a task name, "
                                 f"not {type(call).__name__}")
    if queue is not None or priority is not None:
        opts = EnqueueOptions(queue=queue if queue is not None else opts.queue,
                              priority=priority if priority is not None else opts.priority)
    job = task.build(tuple(args), dict(kwargs or {}),  # occurrences sealed at insert
                     EnqueueOptions(queue=opts.queue, priority=opts.priority), None,
                     seal=False)
    return declare_schedule(name, cron, task.name, job, **policy)



def form_to_schedule(app: Any, form: dict[str, str]) -> str:
    """The dashboard's add form (name, cron, task, args as JSON, tz, catchup, overlap):
    adds the run-time schedule, returns its name; bad input raises naming the field."""
    from shiftwork.core.errors import PayloadError
    from shiftwork.core.payload import parse_json

    def field(key: str, default: str | None = None) -> str:
        value = (form.get(key) or "").strip() or default
        if value is None:
            raise ConfigurationError(f"the {key} field is required")
        return value

    name, cron, task = field("name"), field("cron"), field("task")
    args = parse_json(field("args", "[]"), "arguments", app.settings.max_json_depth)
    if not isinstance(args, list | dict):
        raise PayloadError("arguments must be a JSON list or object")
    positional, named = (args, {}) if isinstance(args, list) else ([], args)
    app.schedules.add(name, cron, task, positional, named, tz=field("tz", "UTC"),
                     catchup=field("catchup", "latest"), overlap=field("overlap", "skip"))
    return name
