"""Forks and continue-as-new on PostgreSQL (``store.reruns``)."""

from __future__ import annotations

from typing import Any

from shiftwork.store.postgres.core import PostgresCore


class PostgresReruns:
    def __init__(self, core: PostgresCore) -> None:
        self.q = core.q
        self._conn = core._conn
        self._p = core._p

    def fork_copy(self, source: int, target: int, position: int, version: str,
                  conn: Any) -> None:
        with self._conn(conn) as c:
            params = self._p(source=source, target=target, position=position, version=version)
            c.execute(self.q["fork_run_insert"], params)
            c.execute(self.q["fork_steps_copy"], params)
            c.execute(self.q["fork_streams_copy"], params)

    def continue_as_new(self, job_id: int, attempt: int, args_json: str, version: str,
                        effect_prefix: str, generation: int) -> bool | None:
        with self._conn() as c, c.transaction():
            held = c.execute(self.q["continue_lock"], {"job": job_id, "attempt": attempt}
                             ).fetchone()
            if held is None:
                return None
            for name in ("continue_steps_delete", "continue_events_delete",
                         "continue_joins_delete"):
                c.execute(self.q[name], {"job": job_id})
            c.execute(self.q["continue_effects_delete"], {"prefix": effect_prefix})
            c.execute(self.q["continue_run_reset"], self._p(job=job_id, version=version,
                                                             generation=generation))
            c.execute(self.q["continue_job_args"], {"job": job_id, "args": args_json})
            return bool(held[0])

    def generation(self, job_id: int) -> int | None:
        with self._conn() as c:
            row = c.execute(self.q["run_generation"], {"job": job_id}).fetchone()
        return None if row is None else int(row[0])
