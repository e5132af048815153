"""Durable cursors for long jobs: progress records, and the batch loop.

A long job saves a JSON cursor with ``ctx.checkpoint(cursor)``; the write is fenced by
attempt, so an attempt whose lease was lost cannot overwrite a newer attempt's cursor.
:func:`batches` is the common loop made short: fetch N rows after the last key,
hand them to the task, checkpoint after each batch.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from shiftwork.core.errors import ConfigurationError, PayloadError
from shiftwork.core.payload import Limit, check_text, encode_json
from shiftwork.jobs.running import RunningJob

T = TypeVar("T")



@dataclass(frozen=True)
class Progress:
    """A job's progress as ``ctx.progress`` stores it (the ``progress`` column)."""

    done: float
    total: float | None = None
    message: str | None = None

    @classmethod
    def from_json(cls, value: Any) -> Progress | None:
        if not isinstance(value, dict) or "done" not in value:
            return None
        return cls(value["done"], value.get("total"), value.get("message"))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"done": self.done}
        if self.total is not None:
            out["total"] = self.total
        if self.message:
            out["message"] = self.message
        return out

    @property
    def fraction(self) -> float | None:
        if not self.total:
            return None
        return max(0.0, min(1.0, self.done / self.total))

    def describe(self) -> str:
        """``42% 4,200/10,000 copying rows``, or ``4,200 done`` without a total."""
        if self.total:
            text = f"{self.fraction or 0:.0%} {_num(self.done)}/{_num(self.total)}"
        else:
            text = f"{_num(self.done)} done"
        return f"{text} {self.message}" if self.message else text


def _num(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"


def encode_progress(job_id: int, done: float, total: float | None,
                    message: str | None, limit: Limit) -> str:
    """Checked and encoded for the ``progress`` column; PayloadError names what is wrong."""
    if isinstance(done, bool) or not isinstance(done, (int, float)) or done < 0:
        raise PayloadError(f"job {job_id}: progress done must be a number >= 0, not {done!r}")
    if total is not None and (isinstance(total, bool) or not isinstance(total, (int, float))
                              or total < 0):
        raise PayloadError(f"job {job_id}: progress total must be a number >= 0 or None, "
                           f"not {total!r}")
    if message is not None:
        message = check_text(str(message), f"job {job_id}: progress message", limit)
    # The message was the part to bound; JSON escapes may make it up to 6 times longer.
    whole = Limit(limit.setting, limit.max_bytes * 6 + 256, limit.max_depth)
    return encode_json(Progress(done, total, message).to_json(), f"job {job_id}: progress",
                       whole)


def describe_progress(value: Any) -> str:
    """A progress column for tables: empty when the job never reported any."""
    progress = Progress.from_json(value)
    return progress.describe() if progress else ""


class Batch(list[T], Generic[T]):
    """Rows handed to the task by :func:`batches`, and the cursor that follows them."""

    #: ``{"after": key of the last row, "done": rows so far}``: checkpointed once this
    #: batch is processed. Save it yourself with ``tx.checkpoint(batch.cursor)`` inside
    #: ``ctx.transaction()`` to commit the batch's writes and its cursor together.
    cursor: dict[str, Any]
    number: int  # 1 for the first batch of this attempt


def resume_point(ctx: RunningJob) -> tuple[Any, int]:
    """The key to continue after and the rows already done, from ``ctx.last_checkpoint``."""
    saved = ctx.last_checkpoint
    if saved is None:
        return None, 0
    if not isinstance(saved, dict) or "after" not in saved:
        raise ConfigurationError(
            f"job {ctx.job_id}: its checkpoint {saved!r} was not written by ctx.batches "
            "(expected {'after': key, 'done': n}); use one way of checkpointing per task")
    return saved["after"], int(saved.get("done") or 0)


def as_json(ctx: RunningJob, value: Any) -> Any:
    """``value`` as it comes back from JSON (tuples become lists); PayloadError if it can't."""
    return json.loads(encode_json(value, f"job {ctx.job_id}: batch key",
                                  ctx.runtime.settings.limit("max_checkpoint_bytes")))


def _check_advanced(ctx: RunningJob, after: Any, first: Any) -> None:
    if after is None:
        return
    try:
        advanced = first > after
    except TypeError:
        return  # keys that do not compare: trust the fetch function
    if not advanced:
        raise ConfigurationError(
            f"job {ctx.job_id}: fetch(after={after!r}, n) returned a row with key {first!r}, "
            "which is not after the cursor; fetch must return rows with key > after, "
            "ordered by key")


def batches(ctx: RunningJob, fetch: Callable[[Any, int], Iterable[T]], *,
            key: Callable[[T], Any], size: int = 1000, total: int | None = None,
            message: str | None = None) -> Iterator[Batch[T]]:
    """Process rows in keyset order, ``size`` at a time, resuming after the last checkpoint.

    ``fetch(after, n)`` returns up to ``n`` rows whose key is greater than ``after``
    (``after`` is None at the start), ordered by key; ``key(row)`` is the row's key
    and must be JSON (an int, a string, a list of them). After the task has processed a
    batch and asks for the next one, the cursor is checkpointed with the progress, in
    one statement; a killed attempt therefore redoes at most the batch it was in.
    """
    if size < 1:
        raise ConfigurationError(f"batch size must be >= 1, not {size!r}")
    after, done = resume_point(ctx)
    number = 0
    while True:
        rows = list(fetch(after, size))
        if not rows:
            break
        _check_advanced(ctx, after, as_json(ctx, key(rows[0])))
        last = as_json(ctx, key(rows[-1]))  # as a resumed attempt will see it
        done += len(rows)
        number += 1
        batch: Batch[T] = Batch(rows)
        batch.cursor = {"after": last, "done": done}
        batch.number = number
        yield batch
        # The task came back for more: this batch is processed.
        ctx.stage_progress(done, total, message)
        if ctx.last_checkpoint != batch.cursor:
            ctx.checkpoint(batch.cursor)
        after = last
        if len(rows) < size:
            break
    ctx.progress(done, total if total is not None else done, message)
    ctx.flush_progress()
