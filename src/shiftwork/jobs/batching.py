"""Batched execution: ``@app.task(batch=Batch(size=100, timeout=1.0))``.

A batch task's function is called once with a list of :class:`BatchItem`, one per job;
each job keeps its own row, lease, attempt count and outcome (docs/batching.md). The
worker collects the jobs (worker/batching.py); this module holds the values people use
and the one rule that turns what the function returned into each item's result; the
item itself is jobs/batch_item.py's (it names the job context, which imports the task).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shiftwork.core.bounds import seconds, whole
from shiftwork.core.errors import ConfigurationError

#: The most jobs one call takes: the whole batch is held in memory and renewed by each
#: heartbeat, and one failure of the call retries every one of them.
MAX_BATCH_SIZE = 10_000
#: The longest a partial batch waits for more jobs (its leases are renewed meanwhile).
MAX_BATCH_TIMEOUT = 3600.0


@dataclass(frozen=True)
class Batch:
    """How a batch task's jobs are grouped: up to ``size`` jobs per call, or those that
    arrived within ``timeout`` seconds of the first one (0: whatever one claim brought)."""

    size: int = 100
    timeout: float = 1.0

    def __post_init__(self) -> None:
        whole(self.size, "Batch(size=...)", 1, MAX_BATCH_SIZE)
        object.__setattr__(self, "timeout", seconds(self.timeout, "Batch(timeout=...)",
                                                    maximum=MAX_BATCH_TIMEOUT))


def check_batch_function(fn: Callable[..., Any], name: str) -> None:
    """A batch task's function takes the list of items as its one parameter."""
    params = [p for p in inspect.signature(fn).parameters.values()
              if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY,
                                                      p.POSITIONAL_OR_KEYWORD)]
    if len(params) != 1 or params[0].name == "ctx":
        raise ConfigurationError(
            f"task {name}: a batch task's function takes one parameter, the list of "
            "items (def fn(items: list[BatchItem])); each item carries its job's "
            "arguments and context (item.args, item.kwargs, item.ctx)")


def check_batch_options(name: str, *, timeout: float | None, memory_limit: Any,
                        unique: Any, group_by: Any, dedup: bool = False) -> None:
    """The task options a batch task refuses, each with its reason."""
    if timeout is not None:
        raise ConfigurationError(
            f"task {name}: timeout= cannot be combined with batch=: the jobs run in one "
            "call, which cannot be stopped for one job; bound the work inside the function")
    if memory_limit is not None:
        raise ConfigurationError(
            f"task {name}: memory_limit= cannot be combined with batch=: a ceiling runs "
            "each job in its own child process, and a batch runs its jobs in one call")
    if unique is not False:
        raise ConfigurationError(
            f"task {name}: unique= cannot be combined with batch=: a batch task has no "
            "declared parameters to derive a key from; give each job its own key with "
            "using(key=...)")
    if dedup:
        raise ConfigurationError(
            f"task {name}: unique_for, debounce and unique_states need the task's unique "
            "key, which a batch task cannot have; give them per call with "
            "using(key=..., unique_for=...)")
    if isinstance(group_by, str):
        raise ConfigurationError(
            f"task {name}: group_by={group_by!r} names a parameter, and a batch task has "
            "none declared; give a callable of the job's arguments instead")


def item_results(result: Any, count: int, name: str) -> list[Any]:
    """What each of ``count`` items returned: ``None`` (all succeed, no result) or a list
    of ``count`` values, where an exception instance fails its item alone."""
    if result is None:
        return [None] * count
    if not isinstance(result, (list, tuple)):
        raise TypeError(f"batch task {name} returned {type(result).__name__}: return None "
                        f"or a list of {count} results, one per item, in order")
    if len(result) != count:
        raise TypeError(f"batch task {name} returned {len(result)} results for {count} "
                        "items: return one per item, in order")
    return list(result)
