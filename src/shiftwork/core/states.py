"""Job states and the legal moves between them: the one place they are defined.

::

    scheduled ─┐   (snooze)
               ├─> running ─┬─> succeeded
    available ─┘     │  ▲   ├─> retrying ──> running ...
       ▲             │  │   ├─> dead
       │             ▼  │   └─> cancelled
       └──── (rescue / hand-back / manual retry)

    scheduled / available / retrying ──(hold)──> held ──(release / run now)──> available
    running (hold requested) ──(its attempt would run again)──> held        or scheduled

Every SQL statement that changes ``state`` is guarded by the states it expects
to find (``WHERE state IN (...)``), and the test suite installs a database
trigger generated from :data:`TRANSITIONS` that rejects any other move.
"""

from __future__ import annotations

from enum import StrEnum


class JobState(StrEnum):
    """Where a job is in its life (see the state diagram in docs/architecture.md)."""

    SCHEDULED = "scheduled"  # waiting for its run_at (delayed at enqueue)
    AVAILABLE = "available"  # waiting, ready to be claimed
    RUNNING = "running"  # claimed by a worker holding a lease
    RETRYING = "retrying"  # failed an attempt, waiting out its backoff
    HELD = "held"  # put on hold by a person: never claimed until released
    SUCCEEDED = "succeeded"  # finished; kept until pruned
    DEAD = "dead"  # failed its last attempt (the dead-letter state)
    CANCELLED = "cancelled"  # cancelled by a person, a policy or the task itself


S = JobState

#: The states a job waits in before a worker claims it.
WAITING: frozenset[JobState] = frozenset({S.SCHEDULED, S.AVAILABLE, S.RETRYING})
#: The states a unique key is held in (a held job keeps its key: it runs once released).
ACTIVE: frozenset[JobState] = WAITING | {S.RUNNING, S.HELD}
#: States a job never leaves on its own.
FINAL: frozenset[JobState] = frozenset({S.SUCCEEDED, S.DEAD, S.CANCELLED})

TRANSITIONS: dict[JobState, frozenset[JobState]] = {
    # claim; made due by a manual "run now"; cancelled before it ran; held
    S.SCHEDULED: frozenset({S.RUNNING, S.AVAILABLE, S.CANCELLED, S.HELD}),
    # ... and made later (app.update_job with a future run_at)
    S.AVAILABLE: frozenset({S.RUNNING, S.CANCELLED, S.HELD, S.SCHEDULED}),
    # outcomes of an attempt; snoozed (no attempt spent); rescue of an expired lease
    # or hand-back at shutdown; held (a hold requested while it ran, and it would run again)
    S.RUNNING: frozenset({S.SUCCEEDED, S.RETRYING, S.DEAD, S.CANCELLED, S.SCHEDULED,
                          S.AVAILABLE, S.HELD}),
    S.RETRYING: frozenset({S.RUNNING, S.AVAILABLE, S.CANCELLED, S.HELD, S.SCHEDULED}),
    # released (to scheduled if its run_at is still ahead) or run now; cancelled
    S.HELD: frozenset({S.SCHEDULED, S.AVAILABLE, S.CANCELLED}),
    S.SUCCEEDED: frozenset(),
    # manual retry
    S.DEAD: frozenset({S.AVAILABLE}),
    S.CANCELLED: frozenset({S.AVAILABLE}),
}


def is_legal(old: JobState, new: JobState) -> bool:
    return new in TRANSITIONS[old]


class StepStatus(StrEnum):
    """A recorded workflow step's status."""

    DONE = "done"  # its result (or its failure, or a timeout) is recorded
    SLEEPING = "sleeping"  # a durable sleep, or a step's retry backoff, until wake_at
    WAITING = "waiting"  # waiting for an event, until its deadline


class WorkflowStatus(StrEnum):
    """A workflow instance's durable status (its job's state is separate)."""

    PENDING = "pending"  # enqueued, never run yet
    RUNNING = "running"
    COMPENSATING = "compensating"  # the decision to undo completed steps is recorded
    SUCCEEDED = "succeeded"
    FAILED = "failed"  # a compensation itself failed for good
    COMPENSATED = "compensated"
    CANCELLED = "cancelled"


#: A workflow instance's statuses as stored (``workflow_runs.status``; never ``pending``).
WORKFLOW_STATUSES = frozenset(s.value for s in WorkflowStatus if s is not WorkflowStatus.PENDING)
