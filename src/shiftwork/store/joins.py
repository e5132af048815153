"""A join's wake rule, shared by both engines' ``workflow_event_send``.

A parent workflow waiting on N members (``wf.parallel``, see workflow/children.py) used to
be woken by every member's report and replayed once per wake. Each report now says which
join it belongs to (``join=(prefix, total)``: its event names start with ``prefix``); the
send bumps that join's counter (``workflow_joins``) in its own transaction, under the
parent's row lock on Postgres (SQLite writes one transaction at a time), and wakes the
parent only when all ``total`` are in. The counter starts from a count of the join's
reports so far, once (its first report; a join under way at the upgrade to migration
0015), so each report costs O(1), not a count of the others. The bump and the insert
commit together, so no crash falls between a member's report and the wake it owes; a
count that comes out high only wakes the parent early, and it suspends again, as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shiftwork.core.errors import ShiftworkError


def check_join(key: str | None, join: tuple[str, int] | None) -> None:
    """Refuse a join the count cannot work with (it counts events stored under ``key``)."""
    if join is None:
        return
    prefix, total = join
    if key is None:
        raise ShiftworkError("workflow_event_send: join= needs a key (it counts keyed reports)")
    if not isinstance(prefix, str) or not prefix:
        raise ShiftworkError(f"workflow_event_send: join prefix must be a non-empty string, "
                             f"not {prefix!r}")
    if not isinstance(total, int) or isinstance(total, bool) or total < 1:
        raise ShiftworkError(f"workflow_event_send: join total must be a positive int, "
                             f"not {total!r}")


def join_reported(c: Any, q: Mapping[str, str], job_id: int, key: str | None,
                  join: tuple[str, int]) -> int:
    """Count a report just stored into its join, on connection ``c`` (the parent's lock
    held, or SQLite's write lock); how many of the join's reports are in now."""
    params = {"job": job_id, "key": key, "prefix": join[0], "plen": len(join[0])}
    row = c.execute(q["workflow_join_bump"], params).fetchone()
    if row is None:  # its first report (or the first since the upgrade): count them once
        row = c.execute(q["workflow_join_start"], params).fetchone()
    return int(row[0])
