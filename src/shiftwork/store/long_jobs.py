"""Long jobs' engine-neutral Python, written once: the fenced touch and its yield, and
writing effect keys (reading them decodes per engine).

The SQL is in each engine's ``long_jobs.sql``; the primitives in store/core.py.
"""

from __future__ import annotations

from typing import Any

from shiftwork.model.records import Touch
from shiftwork.store.core import EngineCore
from shiftwork.store.rows import log_rejected


class LongJobsWrites:
    """Long jobs' statements (``store.long_jobs``) on the engine store's sessions; each
    engine's subclass adds paused queues and reading effect keys."""

    def __init__(self, core: EngineCore) -> None:
        self._core = core  # the engine's store: _session, _one (store/core.py)
        self._session = core._session
        self._one = core._one

    def touch(self, job_id: int, attempt: int, lease_seconds: float, *,
              checkpoint: str | None = None, set_checkpoint: bool = False,
              progress: str | None = None, yield_if_paused: bool = False,
              conn: Any = None) -> Touch | None:
        with self._session(conn) as c:
            row = self._one(c, "jobs_touch", id=job_id, attempt=attempt, lease=lease_seconds,
                            set_checkpoint=set_checkpoint, checkpoint=checkpoint,
                            progress=progress)
            if row is None:
                log_rejected("checkpoint" if set_checkpoint else "progress", [(job_id, attempt)])
                return None
            cancel, paused = bool(row[0]), bool(row[1])
            yielded = False
            if paused and yield_if_paused and not cancel:
                yielded = self._one(c, "jobs_yield", id=job_id, attempt=attempt) is not None
        return Touch(cancel_requested=cancel, paused=paused, yielded=yielded)

    def effect_keys_insert(self, key: str, job_id: int | None, attempt: int | None,
                           keep_seconds: float, result: str | None = None,
                           conn: Any = None) -> bool:
        with self._session(conn) as c:
            return self._one(c, "effect_keys_insert", key=key, job_id=job_id, attempt=attempt,
                             result=result, keep=keep_seconds) is not None

    def effect_keys_set_result(self, key: str, result: str, conn: Any = None) -> None:
        with self._session(conn) as c:
            self._one(c, "effect_keys_set_result", key=key, result=result)
