"""Retention: what the leader deletes every ``prune_interval``, in one place.

Finished and dead jobs past their retention, rows of workers gone silent, expired
effect keys, unique keys that no longer hold (expired, or their job finished), schedule
occurrences past the dead-job retention, groups whose jobs are all gone, per-minute
counts older than a day, history buckets past ``history_retention``, and per-group rate
buckets idle long enough to be full again.
Only the leader prunes, so the fleet does this work once.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from shiftwork.model.records import MINUTES_KEPT
from shiftwork.schedules.stored import schedules_of

if TYPE_CHECKING:
    from shiftwork.runtime import Runtime

log = logging.getLogger("shiftwork.worker")


class Pruner:
    """The retention pass; the leader's maintainer runs it every ``prune_interval``."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    def prune(self) -> None:
        store, s = self.rt.store, self.rt.settings
        partitions = getattr(store, "partitions", None)  # PostgreSQL's history ranges
        if partitions is not None:
            upkeep = partitions.maintain(s.retention_finished, s.retention_dead)
            if upkeep.created or upkeep.dropped:
                log.info("history partitions: made %s, dropped %s (%d rows of other tables "
                         "with them), %d jobs moved into new ranges",
                         upkeep.created or "none", upkeep.dropped or "none",
                         upkeep.forgotten, upkeep.moved)
        pruned = store.jobs.prune(s.retention_finished, s.retention_dead)
        store.fleet.workers_prune(max(3 * s.heartbeat_interval, s.lease_seconds))
        store.long_jobs.effect_keys_prune()
        store.jobs.unique_keys_prune()
        schedules_of(store).runs_prune(s.retention_dead)
        store.deps.groups_prune(max(s.retention_finished, s.retention_dead))
        store.observe.queue_minutes_prune(MINUTES_KEPT)
        store.observe.task_minutes_prune(MINUTES_KEPT)
        store.observe.history_prune(s.history_retention)
        for task in self.rt.registry.tasks.values():
            limit = task.options.group_rate_limit
            if limit is not None:  # a bucket refills from empty in capacity / rate seconds
                store.jobs.rate_buckets_prune(f"group:{task.name}:", limit.capacity / limit.rate)
        if pruned:
            log.info("pruned %d finished jobs", pruned)
