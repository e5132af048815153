"""Workflow streams on PostgreSQL (``store.streams``): append with its step, read from an
offset. Readers are woken through the finished-jobs channel."""

from __future__ import annotations

from datetime import datetime

from shiftwork.core.states import JobState
from shiftwork.model.streams import StreamAppend, StreamItem, StreamKey, StreamPage
from shiftwork.store.postgres.core import PostgresCore


class PostgresStreams:
    def __init__(self, core: PostgresCore) -> None:
        self.q = core.q
        self._conn = core._conn
        self._p = core._p
        self.done_channel = core.done_channel

    def append(self, job_id: int, attempt: int, key: str, value_json: str | None, *,
               closed: bool, step: str, position: int, digest: str | None,
               started_at: datetime, max_values: int) -> StreamAppend | None:
        with self._conn() as c, c.transaction():
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
            c.execute(self.q["stream_append"], self._p(
                job=job_id, key=key, seq=count, value=value_json, closed=closed,
                position=position))
            c.execute(self.q["workflow_step_record"], self._p(
                job=job_id, attempt=attempt, name=step, status="done",
                result=str(count), wake_at=None, position=position, kind="stream",
                digest=digest, outcome=None, tries=0, started_at=started_at))
            c.execute(self.q["stream_notify"], {"done_channel": self.done_channel})
            return StreamAppend(count, count, closed, bool(held[0]))

    def read(self, job_id: int, key: str, offset: int, limit: int) -> StreamPage:
        with self._conn() as c:
            # the state first: a job found finished wrote every row before it finished
            state = c.execute(self.q["stream_job_state"], {"job": job_id}).fetchone()
            rows = c.execute(self.q["stream_read"], {"job": job_id, "key": key,
                                                     "offset": offset, "limit": limit}
                             ).fetchall()
        return StreamPage([StreamItem(int(r[0]), r[1], bool(r[2])) for r in rows],
                          JobState(state[0]) if state else None)

    def keys(self, job_id: int) -> list[StreamKey]:
        with self._conn() as c:
            rows = c.execute(self.q["stream_keys"], {"job": job_id}).fetchall()
        return [StreamKey(r[0], int(r[1]), bool(r[2])) for r in rows]
