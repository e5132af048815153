"""Forks and continue-as-new on SQLite (``store.reruns``)."""

from __future__ import annotations

from typing import Any

from shiftwork.store.sqlite.core import SQLiteCore


class SQLiteReruns:
    def __init__(self, core: SQLiteCore) -> None:
        self._core = core
        self.q = core.q
        self._tx = core._tx
        self._now = core._now

    def fork_copy(self, source: int, target: int, position: int, version: str,
                  conn: Any) -> None:
        with self._tx(conn) as c:
            params = {"source": source, "target": target, "position": position,
                      "version": version, "now": self._now()}
            c.execute(self.q["fork_run_insert"], params)
            c.execute(self.q["fork_steps_copy"], params)
            c.execute(self.q["fork_streams_copy"], params)

    def continue_as_new(self, job_id: int, attempt: int, args_json: str, version: str,
                        effect_prefix: str, generation: int) -> bool | None:
        with self._tx() as c:
            held = c.execute(self.q["continue_lock"], {"job": job_id, "attempt": attempt}
                             ).fetchone()
            if held is None:
                return None
            for name in ("continue_steps_delete", "continue_events_delete",
                         "continue_joins_delete"):
                c.execute(self.q[name], {"job": job_id})
            c.execute(self.q["continue_effects_delete"], {"prefix": effect_prefix})
            c.execute(self.q["continue_run_reset"], {"job": job_id, "version": version,
                                                     "generation": generation,
                                                     "now": self._now()})
            c.execute(self.q["continue_job_args"], {"job": job_id, "args": args_json})
            return bool(held[0])

    def generation(self, job_id: int) -> int | None:
        row = self._core.conn.execute(self.q["run_generation"], {"job": job_id}).fetchone()
        return None if row is None else int(row[0])
