"""The words of a schedule's stored rows: its policies and what became of each occurrence.

Plain enums, so the records the store returns (model/records.py) and the schedule
definitions (schedules/definition.py) share them without importing one another.
"""

from __future__ import annotations

from enum import StrEnum


class Catchup(StrEnum):
    SKIP = "skip"  # occurrences missed during downtime are recorded as missed, none run
    LATEST = "latest"  # the most recent missed occurrence runs (the default)
    ALL = "all"  # every missed occurrence runs, up to catchup_cap


class Overlap(StrEnum):
    SKIP = "skip"  # the new occurrence is recorded as skipped (the default)
    BUFFER_ONE = "buffer_one"  # one occurrence waits for the active run; more are skipped
    BUFFER_ALL = "buffer_all"  # every occurrence waits its turn, in order
    CANCEL_OTHER = "cancel_other"  # ask the active run to stop; start after it has
    TERMINATE_OTHER = "terminate_other"  # ask the active run to stop; start now
    ALLOW_ALL = "allow_all"  # start regardless


class RunStatus(StrEnum):
    """What became of one occurrence (``schedule_runs.status``)."""

    PENDING = "pending"  # buffered: waits until no run of the schedule is active
    ENQUEUED = "enqueued"  # its job exists and is waiting or running
    SUCCEEDED = "succeeded"
    FAILED = "failed"  # its job went dead
    CANCELLED = "cancelled"  # its job was cancelled (by a person or cancel_other)
    MISSED = "missed"  # not run: outside the catch-up policy, or past its starting deadline
    SKIPPED = "skipped"  # not run: overlap policy, a full buffer, or the schedule was paused


class DeadManCheck(StrEnum):
    """An occurrence's dead-man check (``expect_success_within``); None: not made yet."""

    OK = "ok"  # a run of the schedule succeeded in time
    LATE = "late"  # none did: alerted once
    NONE = "none"  # not checked (no expectation, or skipped while paused)


class RunKind(StrEnum):
    CRON = "cron"  # came due on time
    CATCHUP = "catchup"  # came due during downtime and was run by the catch-up policy
    TRIGGER = "trigger"  # `shiftwork schedules trigger`: run now
    BACKFILL = "backfill"  # `shiftwork schedules backfill`
