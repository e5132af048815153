"""Workflow streams on SQLite (``store.streams``): append with its step, read from an
offset. Readers see a commit through ``PRAGMA data_version`` (jobs/waiting.py)."""

from __future__ import annotations

import json
from datetime import datetime

from shiftwork.core.states import JobState
from shiftwork.model.streams import StreamAppend, StreamItem, StreamKey, StreamPage
from shiftwork.store.sqlite.core import SQLiteCore


class SQLiteStreams:
    def __init__(self, core: SQLiteCore) -> None:
        self._core = core
        self.q = core.q
        self._tx = core._tx
        self._now = core._now

    def append(self, job_id: int, attempt: int, key: str, value_json: str | None, *,
               closed: bool, step: str, position: int, digest: str | None,
               started_at: datetime, max_values: int) -> StreamAppend | None:
        with self._tx() as c:
            held = c.execute(self.q["continue_lock"], {"job": job_id, "attempt": attempt}
                             ).fetchone()
            if held is None:
                return None
            done = c.execute(self.q["stream_step_done"], {"job": job_id, "name": step}
                             ).fetchone()
            if done is not None:  # a repeat after a lost reply: written once already
                seq = int(done[0]) if done[0] is not None else None
                return StreamAppend(seq, seq or 0, closed, bool(held[0]))
            tail = c.execute(self.q["stream_tail"], {"job": job_id, "key": key}).fetchone()
            assert tail is not None  # an aggregate: always a row
            count, is_closed = int(tail[0]), bool(tail[1])
            if is_closed or (not closed and count >= max_values):
                return StreamAppend(None, count, is_closed, bool(held[0]))
            now = self._now()
            c.execute(self.q["stream_append"], {
                "job": job_id, "key": key, "seq": count, "value": value_json,
                "closed": int(closed), "position": position, "now": now})
            c.execute(self.q["workflow_step_record"], {
                "job": job_id, "attempt": attempt, "name": step, "status": "done",
                "result": str(count), "now": now, "wake_at": None, "position": position,
                "kind": "stream", "digest": digest, "outcome": None, "tries": 0,
                "started_at": started_at.timestamp()})
            return StreamAppend(count, count, closed, bool(held[0]))

    def read(self, job_id: int, key: str, offset: int, limit: int) -> StreamPage:
        conn = self._core.conn
        # the state first: a job found finished wrote every row before it finished
        state = conn.execute(self.q["stream_job_state"], {"job": job_id}).fetchone()
        rows = conn.execute(self.q["stream_read"], {"job": job_id, "key": key,
                                                    "offset": offset, "limit": limit}
                            ).fetchall()
        return StreamPage([StreamItem(int(r[0]), None if r[1] is None else json.loads(r[1]),
                                      bool(r[2])) for r in rows],
                          JobState(state[0]) if state else None)

    def keys(self, job_id: int) -> list[StreamKey]:
        rows = self._core.conn.execute(self.q["stream_keys"], {"job": job_id}).fetchall()
        return [StreamKey(r[0], int(r[1] or 0), bool(r[2])) for r in rows]
