"""A join's wake rule, shared by both engines' ``workflow_event_send``.

A parent workflow waiting on N members (``wf.parallel``, see workflow/children.py) used to
be woken by every member's report and replayed once per wake. Each report now says which
join it belongs to (``join=(prefix, total)``: its event names start with ``prefix``); the
send counts that join's reports in its own transaction, under the parent's row lock on
Postgres (SQLite writes one transaction at a time), and wakes the parent only when all
``total`` are in. The count and the insert commit together, so no crash falls between a
member's report and the wake it owes; a count that comes out high only wakes the parent
early, and it suspends again, as before.
"""

from __future__ import annotations

from ..errors import ShiftworkError


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
