"""Which values of a job are sealed, and how each is sealed and opened.

An encrypted task (``@app.task(encrypt=True)``, or every task with
``App(encrypt_all=True)``) seals, with the App's :class:`~shiftwork.core.crypt.Keys`:

=============  =========================================  ====================
value          sealed where                               associated data
=============  =========================================  ====================
arguments      the enqueue (``Task.build``)               ``args:<task>``
result         the attempt's end (``Run.finalize``)       ``result:<job id>``
checkpoint     the fenced row write (``JobContext``)      ``checkpoint:<id>``
progress text  the same write (``done``/``total`` clear)  ``progress:<id>``
error text     ``Run.finalize`` (message and traceback)   ``error.message:<id>``
=============  =========================================  ====================

The arguments are bound to their task, not their row: the job's id is not known before
the insert. Sealed values are opened by the worker (arguments, checkpoint: a key
problem gives the job back for later, see :func:`key_problem`), by ``handle.result()``
(raises EncryptionKeyError) and by the App's reads (``get_job``, ``list_jobs``: a value
that stays closed reads as :class:`~shiftwork.core.crypt.Encrypted`, ``"encrypted"``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from shiftwork.core.crypt import SEAL, Encrypted, Keys, SealedArgs, is_sealed
from shiftwork.core.errors import EncryptionKeyError
from shiftwork.core.states import JobState
from shiftwork.model.new_job import NewJob
from shiftwork.model.outcome import Outcome
from shiftwork.model.records import ClaimedJob, Job

#: Seconds a job whose values this worker cannot open waits before it is tried again
#: (by any worker), its attempt not counted.
KEY_PROBLEM_DELAY = 60.0
_ERROR_TEXTS = ("message", "traceback")
SEALED_PREFIX = '{"' + SEAL + '":'  # how every sealed column's text begins (Keys.seal_json)


def task_keys(keys: Keys | None, encrypted: bool) -> Keys | None:
    """The keys that seal a task's values, None when the task is not ``encrypted``."""
    return keys if encrypted else None


def seal_rows(keys: Keys | None, encrypted: Callable[[str], bool], rows: list[NewJob]) -> None:
    """Seal, in place, the clear arguments of the rows of encrypted tasks: a schedule's
    occurrences, whose definition keeps its arguments clear (a sealed copy would differ at
    every declaration, each a change to reconcile)."""
    if keys is None:
        return
    for row in rows:
        if not row.args_json.startswith(SEALED_PREFIX) and encrypted(row.task):
            row.args_json = keys.seal_json(row.args_json, f"args:{row.task}")


def seal_json(keys: Keys, text: str, aad: str) -> str:
    """JSON text sealed: the envelope, as JSON text for the column."""
    return keys.seal_json(text, aad)


def open_value(keys: Keys | None, value: Any, aad: str) -> Any:
    """``value`` opened when sealed (raises EncryptionKeyError), else as it is."""
    if not is_sealed(value):
        return value
    if keys is None:
        raise EncryptionKeyError(f"{aad}: sealed with key {value.get('$enc')!r}, and this "
                                 "App has no keys (App(encryption=Keys(...)))")
    return json.loads(keys.open(value, aad))


def _shown(keys: Keys | None, value: Any, aad: str) -> Any:
    """``value`` opened, or :class:`Encrypted` when it stays closed (for reads)."""
    try:
        return open_value(keys, value, aad)
    except EncryptionKeyError as exc:
        return Encrypted(str(value.get("$enc")), str(exc))


def seal_progress(keys: Keys, text: str, job_id: int) -> str:
    """A progress document with its message sealed; done and total stay clear (bars)."""
    progress = json.loads(text)
    if isinstance(progress, dict) and progress.get("message") is not None:
        progress["message"] = keys.seal(json.dumps(progress["message"]),
                                        f"progress:{job_id}")
    return json.dumps(progress, separators=(",", ":"))


def seal_error(keys: Keys, record: dict[str, Any], job_id: int) -> dict[str, Any]:
    """An error record with its message and traceback sealed (kind, type stay clear)."""
    out = dict(record)
    for name in _ERROR_TEXTS:
        if isinstance(out.get(name), str):
            out[name] = keys.seal(json.dumps(out[name]), f"error.{name}:{job_id}")
    return out


def open_error(keys: Keys | None, record: Any, job_id: int) -> Any:
    """An error record with its texts opened, or ``encrypted`` where they stay closed."""
    if not isinstance(record, dict):
        return record
    return {k: _shown(keys, v, f"error.{k}:{job_id}") if k in _ERROR_TEXTS else v
            for k, v in record.items()}


def seal_outcome(keys: Keys, outcome: Outcome) -> Outcome:
    """An attempt's outcome with its result and error text sealed for the row."""
    result = outcome.result_json
    return replace(
        outcome,
        result_json=None if result is None else seal_json(keys, result,
                                                          f"result:{outcome.job_id}"),
        error=None if outcome.error is None else seal_error(keys, outcome.error,
                                                            outcome.job_id))


def open_args(keys: Keys | None, task: str, args: list[Any], kwargs: dict[str, Any]
              ) -> tuple[list[Any], dict[str, Any]]:
    if not isinstance(args, SealedArgs):
        return args, kwargs
    opened = open_value(keys, args[0], f"args:{task}")
    return list(opened.get("args", [])), dict(opened.get("kwargs", {}))


def open_claimed(keys: Keys | None, job: ClaimedJob) -> ClaimedJob:
    """A claimed job with its arguments and checkpoint opened (EncryptionKeyError)."""
    if not isinstance(job.args, SealedArgs) and not is_sealed(job.checkpoint):
        return job
    args, kwargs = open_args(keys, job.task, job.args, job.kwargs)
    return replace(job, args=args, kwargs=kwargs,
                   checkpoint=open_value(keys, job.checkpoint, f"checkpoint:{job.id}"))


def open_job(keys: Keys | None, job: Job) -> Job:
    """A job as people read it: each sealed value opened, or ``encrypted`` when this App
    cannot open it. Never raises: a read shows what it can."""
    sealed_args = isinstance(job.args, SealedArgs)
    if not (sealed_args or is_sealed(job.result) or is_sealed(job.checkpoint)
            or (isinstance(job.progress, dict) and is_sealed(job.progress.get("message")))
            or any(isinstance(e, dict) and is_sealed(e.get("message")) for e in job.errors)):
        return job
    args, kwargs = job.args, job.kwargs
    if sealed_args:
        try:
            args, kwargs = open_args(keys, job.task, job.args, job.kwargs)
        except EncryptionKeyError as exc:
            args, kwargs = [Encrypted(str(job.args[0].get("$enc")), str(exc))], {}
    progress = job.progress
    if isinstance(progress, dict) and is_sealed(progress.get("message")):
        progress = {**progress, "message": _shown(keys, progress["message"],
                                                  f"progress:{job.id}")}
    return replace(job, args=args, kwargs=kwargs,
                   result=_shown(keys, job.result, f"result:{job.id}"),
                   checkpoint=_shown(keys, job.checkpoint, f"checkpoint:{job.id}"),
                   progress=progress,
                   errors=[open_error(keys, e, job.id) for e in job.errors])


def key_problem(now: datetime, job: ClaimedJob, exc: EncryptionKeyError) -> Outcome:
    """The outcome of a claimed job whose values this worker cannot open: back to
    waiting in :data:`KEY_PROBLEM_DELAY` seconds (a snooze: the attempt is not counted),
    with the problem in its error history. A key problem is the deployment's, not the
    job's: it never kills the job, and a worker that has the key runs it."""
    record = {"attempt": job.attempt, "kind": "encryption_key",
              "type": "shiftwork.core.errors.EncryptionKeyError",
              "message": f"{exc}; given back unrun, attempt not counted, tried again in "
                         f"{KEY_PROBLEM_DELAY:.0f} s"}
    return Outcome(job.id, job.attempt, JobState.SCHEDULED,
                   run_at=now + timedelta(seconds=KEY_PROBLEM_DELAY),
                   error=record, task=job.task, queue=job.queue)
