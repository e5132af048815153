"""SQLite's steps of the resolve cascade (store/deps.py): no arrays to update in bulk,
so edges are taken in one statement and each dependent, group and callback is counted
down by its own (all in the caller's write transaction)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from shiftwork.core.states import JobState
from shiftwork.store.deps import Cascade, Row


def tally(finished: Iterable[tuple[int, bool]]) -> dict[int, list[int]]:
    """(group, succeeded) per member finished -> group: [finished, of them failed]."""
    counts: dict[int, list[int]] = {}
    for group_id, succeeded in finished:
        hit = counts.setdefault(group_id, [0, 0])
        hit[0] += 1
        hit[1] += not succeeded
    return counts


class SQLiteCascade(Cascade):
    """The cascade on this thread's SQLite connection, inside its write transaction."""

    def _resolve_step(self, c: sqlite3.Connection, parent_ids: list[int],
                      finished: bool = False) -> list[Row]:
        hits: dict[int, list[int]] = {}  # dependent -> [edges taken, a failed parent or 0]
        for job_id, parent_id, bad in self._rows(c, "deps_take_edges", ids=parent_ids):
            hit = hits.setdefault(job_id, [0, 0])
            hit[0] += 1
            if bad and (not hit[1] or parent_id < hit[1]):
                hit[1] = parent_id
        changed: list[Row] = []
        for job_id, (n, bad) in sorted(hits.items()):
            changed += self._rows(c, "deps_count_down", id=job_id, n=n, bad=bad or None)
        return changed

    def _groups_count_step(self, c: sqlite3.Connection, job_ids: list[int]) -> list[int]:
        return self.count_down(c, tally(
            (group_id, state == JobState.SUCCEEDED.value)
            for group_id, state in self._rows(c, "groups_members_count", ids=job_ids)))

    def count_down(self, c: sqlite3.Connection, counts: dict[int, list[int]]) -> list[int]:
        """Take ``counts`` (group -> [finished, failed]) off their groups; the groups
        whose callback may now be due."""
        due = []
        for group_id, (n, bad) in sorted(counts.items()):
            due += [r[0] for r in self._rows(c, "groups_count_down", group=group_id, n=n,
                                             bad=bad) if r[1]]
        return due

    def _groups_settle_step(self, c: sqlite3.Connection, group_ids: list[int]) -> list[Row]:
        changed: list[Row] = []
        for group_id, callback_id, cancel in self._rows(c, "groups_settle", ids=group_ids):
            changed += self._rows(c, "groups_release", id=callback_id, group=group_id,
                                  cancel=bool(cancel))
        return changed
