"""The flow a claim for one queue must respect, from what the App declared."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shiftwork.model.limits import ClaimFlow

if TYPE_CHECKING:
    from shiftwork.registry import Registry


def claim_flow(registry: Registry, queue: str) -> ClaimFlow:
    """The rate limits and group caps a claim for ``queue`` must respect."""
    tasks = [t for t in registry.tasks.values() if t.options.queue == queue]
    declared = registry.queue_options.get(queue)
    return ClaimFlow(
        queue_rate=declared.rate_limit if declared else None,
        task_rates={t.name: t.options.rate_limit for t in tasks if t.options.rate_limit},
        group_caps={t.name: t.options.group_concurrency for t in tasks
                    if t.options.group_concurrency},
        group_rates={t.name: t.options.group_rate_limit for t in tasks
                     if t.options.group_rate_limit},
        fair=bool(declared and declared.fair),
        weights=dict(declared.weights) if declared else {})
