"""What a running task sees of its job: ids, attempt, cancellation, and the long-job tools.

Checkpoints, progress, explicit heartbeats and transactions all write the job's row
fenced by attempt: an attempt whose lease was lost (rescued, re-claimed) gets
:class:`~shiftwork.core.errors.LeaseLost` instead of overwriting the newer attempt's state.
"""

from __future__ import annotations

import json
import logging
import math

# Real time, not the runtime's clock: progress writes are paced by the job's real work.
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from shiftwork.core.backoff import repeat_on_storage_error
from shiftwork.core.bounds import MAX_ITEMS, seconds, whole
from shiftwork.core.control import Snooze
from shiftwork.core.errors import JobCancelled, JobPaused, LeaseLost
from shiftwork.core.payload import encode_json
from shiftwork.jobs.checkpoint import Batch, batches, encode_progress
from shiftwork.jobs.idempotency import Transaction, once_outside
from shiftwork.jobs.sealing import seal_json, seal_progress, task_keys
from shiftwork.model.records import Touch

if TYPE_CHECKING:
    from shiftwork.runtime import Runtime

T = TypeVar("T")
R = TypeVar("R")

log = logging.getLogger("shiftwork.flow")
#: The logger ``ctx.log`` writes to (the one ``shiftwork.*`` logger kept in per-job logs).
JOB_LOGGER = "shiftwork.job"

#: Progress is written at most this often (seconds) unless it reaches its total;
#: checkpoints, heartbeats and the end of the attempt write whatever is pending.
PROGRESS_INTERVAL = 1.0


@dataclass
class JobContext:
    """Passed to a task whose first parameter is named ``ctx``."""

    runtime: Runtime  # what the job runs on: store, settings, clock, events
    job_id: int
    task: str
    queue: str
    attempt: int
    max_attempts: int
    last_checkpoint: Any = None
    meta: dict[str, Any] = field(default_factory=dict)
    #: runs before this one that did not count as attempts (snoozes, workflow suspensions,
    #: hand-backs at shutdown): ``attempt`` counts every run, it fences this run's writes
    uncounted: int = 0
    # A plain flag, not a threading.Event: one is made per job, and an Event (with its
    # Condition and lock) costs more to build than a no-op job takes to run.
    _cancelled: bool = field(default=False, repr=False)
    _pending_progress: str | None = field(default=None, repr=False)
    _progress_written: float = field(default=0.0, repr=False)
    _lost: bool = field(default=False, repr=False)
    #: what this attempt reported processing (ctx.processed); None: it did not say
    items: int | None = field(default=None, repr=False)

    @property
    def counted_attempt(self) -> int:
        """This attempt's number against ``max_attempts`` (1 on the first; a run that
        ended in a snooze or a workflow suspension did not count)."""
        return self.attempt - self.uncounted

    @property
    def cancelled(self) -> bool:
        """True once someone asked for this job to stop."""
        return self._cancelled

    def group_results(self) -> list[Any]:
        """In a group's callback: the members' results, in the order they were given
        (None for a member that did not succeed)."""
        from shiftwork.composition.compose import group_results

        return group_results(self.runtime.store, self.job_id, self.runtime.keys)

    def raise_if_cancelled(self) -> None:
        """Raise :class:`JobCancelled` if someone asked to cancel this job."""
        if self._cancelled:
            raise JobCancelled(f"job {self.job_id} was cancelled")

    def _request_cancel(self) -> None:
        self._cancelled = True

    # -- fenced writes to the job's row -----------------------------------------------

    def _touch(self, *, checkpoint: str | None = None, set_checkpoint: bool = False,
               conn: Any = None) -> Touch:
        if self._lost:
            raise LeaseLost(f"job {self.job_id} attempt {self.attempt} lost its lease earlier")
        touch = self._touch_once(checkpoint, set_checkpoint, conn)
        if touch is None:
            self._lost = True
            raise LeaseLost(
                f"job {self.job_id} attempt {self.attempt} no longer holds its job (its lease "
                "expired and it was rescued, or it was finished elsewhere); stopping this attempt")
        self._pending_progress = None
        self._progress_written = time.monotonic()
        if touch.cancel_requested:
            self._request_cancel()
        return touch

    def _touch_once(self, checkpoint: str | None, set_checkpoint: bool, conn: Any) -> Touch | None:
        progress = self._pending_progress
        declared = self.runtime.registry.tasks.get(self.task)
        keys = task_keys(self.runtime.keys, declared is not None and declared.options.encrypt)
        if keys is not None:  # an encrypted task's: sealed for the row, kept clear here
            if checkpoint is not None:
                checkpoint = seal_json(keys, checkpoint, f"checkpoint:{self.job_id}")
            if progress is not None:
                progress = seal_progress(keys, progress, self.job_id)

        def write() -> Touch | None:
            return self.runtime.store.long_jobs.touch(
                self.job_id, self.attempt, self.runtime.settings.lease_seconds,
                checkpoint=checkpoint, set_checkpoint=set_checkpoint,
                progress=progress, yield_if_paused=set_checkpoint, conn=conn)

        if conn is not None:  # in the caller's transaction, whose fate is the caller's
            return write()
        return repeat_on_storage_error(write)

    def _stop_if_asked(self, touch: Touch, where: str) -> None:
        if self.cancelled:
            raise JobCancelled(f"job {self.job_id} was cancelled; stopped at {where}")
        if touch.yielded:
            self.runtime.events.emit("job.yielded", job_id=self.job_id, attempt=self.attempt,
                                 queue=self.queue)
            raise JobPaused(f"queue {self.queue} is paused; job {self.job_id} went back to "
                            f"waiting at {where} and resumes from there")

    def checkpoint(self, cursor: Any) -> None:
        """Durably save ``cursor`` (JSON) for this job, with any pending progress.

        A later attempt of the job (after a crash, a retry or a pause) reads it as
        ``ctx.last_checkpoint``. Raises :class:`JobCancelled` here if the job was
        cancelled, :class:`JobPaused` if its queue was paused (the job is then back in its
        queue, resuming from this cursor), :class:`LeaseLost` if this attempt is stale.
        """
        data = encode_json(cursor, f"job {self.job_id}: checkpoint",
                           self.runtime.settings.limit("max_checkpoint_bytes"))
        touch = self._touch(checkpoint=data, set_checkpoint=True)
        self.last_checkpoint = json.loads(data)
        self._stop_if_asked(touch, f"checkpoint {data[:200]}")

    def batches(self, fetch: Callable[[Any, int], Iterable[T]], *, key: Callable[[T], Any],
                size: int = 1000, total: int | None = None,
                message: str | None = None) -> Iterator[Batch[T]]:
        """Rows in keyset order, ``size`` at a time, checkpointed after each batch.

        ``fetch(after, n)`` returns up to ``n`` rows with ``key(row) > after`` in key order
        (``after`` is None at first). Resumes after the last checkpoint::

            for batch in ctx.batches(lambda after, n: db.rows_after(after or 0, n),
                                     key=lambda row: row.id, size=1000, total=count):
                process(batch)

        See :func:`shiftwork.jobs.checkpoint.batches`.
        """
        return batches(self, fetch, key=key, size=size, total=total, message=message)

    # -- progress ---------------------------------------------------------------------

    def stage_progress(self, done: float, total: float | None = None,
                       message: str | None = None) -> None:
        """Set progress without writing it: the next write of the job's row carries it."""
        limit = self.runtime.settings.limit("max_progress_message_bytes")
        self._pending_progress = encode_progress(self.job_id, done, total, message, limit)

    def progress(self, done: float, total: float | None = None,
                 message: str | None = None) -> None:
        """Report how far the job is, seen in ``jobs show``, ``jobs list`` and ``jobs follow``.

        Written at most once a second (:data:`PROGRESS_INTERVAL`), at once when ``done``
        reaches ``total``, and always at the next checkpoint and at the end of the attempt.
        """
        self.stage_progress(done, total, message)
        reached = total is not None and done >= total
        if reached or time.monotonic() - self._progress_written >= PROGRESS_INTERVAL:
            self.flush_progress()

    def flush_progress(self) -> None:
        """Write pending progress now (raises :class:`LeaseLost` if this attempt is stale)."""
        if self._pending_progress is not None:
            self._touch()

    # -- what the run did ---------------------------------------------------------------

    def processed(self, n: int = 1) -> None:
        """Count ``n`` more items as processed by this attempt (the counts add up).

        The total is stored with the attempt's outcome (``jobs show``, the dashboard, a
        schedule's run history, ``shiftwork_items_processed_total``) and is what
        ``expect_items=`` holds a run to (docs/alerting.md). Not calling it at all leaves
        the run's count unknown, which an expectation counts as 0. ``ctx.progress`` does not
        count here: it draws the bar, in any unit.
        """
        count = whole(n, "ctx.processed: n", 0, MAX_ITEMS)
        self.items = min((self.items or 0) + count, MAX_ITEMS)

    # -- logs ---------------------------------------------------------------------------

    def log(self, message: str, *args: Any, level: int = logging.INFO) -> None:
        """Log a line kept with this attempt (``shiftwork jobs logs``, the job page), also
        passed to your logging handlers. Records logged through :mod:`logging` while the
        job runs are kept too, at the levels your logging lets through; this one is kept
        whatever the levels (its logger is ``shiftwork.job``)."""
        try:  # formatted here: a bad format is kept as given, never raised in a handler
            text = str(message) % args if args else str(message)
        except (TypeError, ValueError):
            text = f"{message!r} % {args!r}"
        logger = logging.getLogger(JOB_LOGGER)
        logger.handle(logger.makeRecord(JOB_LOGGER, level, "(job)", 0, text, (), None))

    # -- liveness ---------------------------------------------------------------------

    def heartbeat(self) -> None:
        """Extend this job's lease now and look for a cancellation.

        The worker renews leases on its own; call this inside a long step to learn of a
        cancellation early. Raises :class:`JobCancelled` or :class:`LeaseLost`.
        """
        self._touch()
        if self.cancelled:
            raise JobCancelled(f"job {self.job_id} was cancelled; stopped at a heartbeat")

    # -- flow control -------------------------------------------------------------------

    def rate_limited(self, retry_after: float) -> NoReturn:
        """The service this task calls said "too many requests": hold the task's rate
        limit for ``retry_after`` seconds, fleet-wide (no job of the task starts before
        then), and run this job again after it, without spending an attempt.

        ``retry_after`` must be a finite number of seconds > 0; a longer hold than
        ``Settings.max_retry_after`` (an hour by default) is cut to it and logged, so a
        partner's odd ``Retry-After`` cannot stop the task for good. ``app.clear_backoff``
        (``shiftwork queues clear-backoff``) ends a hold early.
        """
        asked = seconds(retry_after, "rate_limited: retry_after", allow_zero=False,
                        maximum=math.inf)
        hold = min(asked, self.runtime.settings.max_retry_after)
        if hold < asked:
            log.warning("job %s (%s): rate_limited(retry_after=%g) cut to %g seconds "
                        "(Settings.max_retry_after)", self.job_id, self.task, asked, hold)
        self.runtime.store.jobs.rate_limit_push_back(f"task:{self.task}", hold)
        self.runtime.events.emit("job.rate_limited", job_id=self.job_id, task=self.task,
                             queue=self.queue, retry_after=hold)
        raise Snooze(hold)

    # -- effects that must happen once --------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """A transaction on the queue's database that commits together with the job's row.

        Your writes (``tx.execute``), effect keys (``tx.once``), a checkpoint
        (``tx.checkpoint``) and progress commit in one transaction, fenced by attempt:
        if this attempt is stale, everything rolls back and :class:`LeaseLost` is raised.
        """
        with self.runtime.store.transaction() as conn:
            tx = Transaction(self, conn)
            yield tx
            if tx.progress_json is not None:
                self._pending_progress = tx.progress_json
            touch = tx.commit_fence()
        if tx.checkpoint_json is not None:
            self.last_checkpoint = json.loads(tx.checkpoint_json)
        self._stop_if_asked(touch, "the end of a transaction")

    def once(self, key: str, fn: Callable[[], R], *, keep: float | None = None) -> R:
        """Run ``fn`` once per ``key``, across attempts, retries and jobs; return its result.

        A second call with the same key returns the first result (as JSON gives it back)
        without calling ``fn``. For effects outside the database, pass ``key`` downstream
        too (a payment API's idempotency key), since ``fn`` may run again if the attempt
        dies between the effect and its record. Keys are kept ``keep`` seconds
        (default ``Settings.effect_retention``).
        """
        return once_outside(self, key, fn, keep, self.transaction)
