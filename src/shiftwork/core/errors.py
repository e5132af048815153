"""One exception root for everything shiftwork raises on purpose.

Each error says what was wrong and, where it can, what to do about it.
Database errors keep their cause (``raise ... from exc``).
"""

from __future__ import annotations

from typing import Any

from shiftwork.core.redact import redact


class ShiftworkError(Exception):
    """Root of every error shiftwork raises on purpose.

    Its message never carries a database password: whatever DSN a message quotes, or
    a driver error it wraps, is redacted here, once for every error.
    """

    def __init__(self, *args: Any) -> None:
        super().__init__(*(redact(a) if isinstance(a, str) else a for a in args))


class ConfigurationError(ShiftworkError):
    """The app, a task or a queue was declared wrongly (bad DSN, bad name, bad option)."""


class NotMigratedError(ConfigurationError):
    """The database has no shiftwork tables yet, or older ones: run ``shiftwork migrate``."""

    #: The command that migrates this database without importing the app (the schema
    #: check fills it in; the loader quotes it when an import itself met this error).
    migrate_command = "shiftwork migrate --dsn DSN"


class DatabaseMissingError(ConfigurationError):
    """The database named does not exist (a SQLite file, a PostgreSQL database)."""

    migrate_command = "shiftwork migrate --dsn DSN"


class DatabaseAuthError(ConfigurationError):
    """The server refused the login: retrying will not help."""


class UnknownTaskError(ShiftworkError, LookupError):
    """A job names a task that is not registered on this app."""


def unknown_task_message(task: str) -> str:
    """What a job whose task this worker does not know records as its error: not the
    registered names (the error is shown to anyone who may read the dashboard)."""
    return (f"unknown task {task!r}: not registered on the worker that claimed it (check the "
            "task's name= and that the worker imports the module defining it)")


class PayloadError(ShiftworkError, ValueError):
    """Job arguments that cannot be stored: not JSON, too large, or not matching the signature."""


class PayloadTooLargeError(PayloadError):
    """A stored value over its limit: too many bytes, nested too deep, or a huge integer.

    The message names the field, its size and the ``Settings`` field that sets the limit.
    """


class JobNotFoundError(ShiftworkError, LookupError):
    """No job with that id."""


class JobStateError(ShiftworkError):
    """An action that makes no sense in the job's state (holding a finished job, editing
    a running one); the message names the state and what the action takes."""


class StorageError(ShiftworkError):
    """The database could not be reached or refused an operation."""


class CommitUnknownError(StorageError):
    """The connection broke after a statement was sent and before its reply arrived.

    The statement may or may not have committed. Every write shiftwork makes for itself is
    safe to repeat (fenced by attempt, unique per occurrence, or reconciled afterwards); an
    enqueue is safe to repeat when the job has a unique key (``unique=`` / ``.using(key=)``).
    """


class JobCancelled(BaseException):
    """Raised inside a task when its job was cancelled.

    A BaseException on purpose: a task's bare ``except Exception`` must not swallow it.
    """


class LeaseLost(BaseException):
    """Raised inside a task whose attempt no longer holds its job.

    Its lease expired and the job was rescued (and perhaps re-claimed), or it was
    finished by someone else: a fenced write (checkpoint, progress, heartbeat, the
    commit of ``ctx.transaction()``) changed nothing. The attempt must stop; its
    transaction was rolled back and its outcome will be rejected. A BaseException, like
    :class:`JobCancelled`, so that ``except Exception`` in a task cannot keep a stale
    attempt going. Make leases longer than your longest step, or call ``ctx.heartbeat()``.
    """


class JobPaused(BaseException):
    """Raised at a checkpoint when the job's queue is paused.

    The job was given back to its queue (without spending an attempt) in the same
    statement that saved the checkpoint; it resumes from there once the queue is resumed.
    """


class MemoryLimitExceeded(ShiftworkError):
    """An attempt passed its task's memory ceiling (``memory_limit``): its child process
    was stopped, and the attempt fails like any other (retried under its policy)."""


# -- the failures the database records by name (no Python code raises them) -----------
# A job's error record names its exception's type; these five are written by shiftwork's
# SQL, which has no exception to name, so they name a class here (a tool that imports a
# record's type, such as Django's TaskError.exception_class, finds one).


class LeaseExpired(ShiftworkError):
    """The attempt's worker stopped renewing its lease (it died, froze or lost the
    database): the rescuer gave the job back to its queue, or to ``dead``."""


class StartingDeadline(ShiftworkError):
    """A schedule's job did not start within its ``starting_deadline``: cancelled."""


class QueuePaused(ShiftworkError):
    """The job's queue was paused at one of its checkpoints: back in its queue, its
    attempt not counted, resuming from that checkpoint."""


class ReplyLost(ShiftworkError):
    """The reply to the claim that took the job was lost, so it never reached the worker:
    given back at once, its attempt not counted (docs/architecture.md, "Lost replies")."""


class DependencyFailed(ShiftworkError):
    """A job this one depends on failed for good (and ``on_failure`` says not to run)."""


#: The bare type names error records carry for the classes above.
RECORDED_FAILURES = frozenset({"LeaseExpired", "StartingDeadline", "QueuePaused", "ReplyLost",
                               "DependencyFailed"})


class JobFailed(ShiftworkError):
    """Raised by ``job.result()`` when the job died: ``error`` is its last error record."""

    def __init__(self, job_id: int, error: dict[str, Any] | None) -> None:
        self.job_id = job_id
        self.error = error or {}
        what = f"{self.error.get('type', 'error')}: {self.error.get('message', '')}".strip()
        super().__init__(f"job {job_id} died: {what}")


class DependencyError(ConfigurationError):
    """A dependency, group or chain that cannot be enqueued (unknown job, cycle, empty)."""


class EncryptionKeyError(ShiftworkError):
    """An encrypted value this App cannot open: its key id is not among the App's keys, or
    the key under that id does not open it (a wrong key, or the value was altered or moved
    to another row or column). A worker that meets one gives the job back for later, its
    attempt not counted (docs/security.md): a key problem never kills a job."""


class EncryptionUnavailableError(ConfigurationError):
    """Encryption was asked for, and the ``cryptography`` package is not installed
    (``pip install 'shiftwork[encryption]'``)."""
