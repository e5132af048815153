"""A fair queue's claim: round-robin over its groups, every other limit still holding.

Run by flow/claiming.py in the claim's transaction, on the engine's statements
(:class:`~shiftwork.store.base.ClaimTx`); the fair cursor's row stays locked until commit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shiftwork.flow.claim_limited import token_room
from shiftwork.model.limits import ClaimFlow, RateLimit
from shiftwork.store.base import ClaimTx
from shiftwork.store.jobs import Row

#: Groups a fair claim steps through at most (one index probe each), so a claim's cost is
#: bounded by this, not by how many groups or jobs wait.
FAIR_SCAN = 256

#: Jobs without a group on a fair queue are found among this many first waiting jobs: a
#: bounded look, so give every job of a fair queue a group (docs/flow-control.md).
FAIR_PEEK = 50


class _Admit:
    """Whether one more job of a task (and group) fits every limit, spending if it does."""

    def __init__(self, limits: dict[str, int], flow: ClaimFlow, steps: ClaimTx,
                 room: Callable[[str, RateLimit], int], tokens: dict[str, float]) -> None:
        self.limits, self.flow, self.steps, self.room, self.tokens = (
            limits, flow, steps, room, tokens)
        self.task_room: dict[str, int] = {}
        self.group_running: dict[str, dict[str, int]] = {}

    def __call__(self, task: str, group: str | None) -> bool:
        flow = self.flow
        if task not in self.task_room:
            n = 1 << 30
            if task in self.limits:
                # takes the task's lock (not for a limit of 0, which excludes the task)
                n = self.limits[task] and self.limits[task] - self.steps.running(task)
            elif task in flow.grouped:
                self.steps.lock_task(task)
            self.task_room[task] = n
        if self.task_room[task] < 1:
            return False
        rate = flow.task_rates.get(task)
        if rate is not None and self.room(f"task:{task}", rate) < 1:
            return False
        cap = flow.group_caps.get(task)
        group_rate = flow.group_rates.get(task)
        if group is not None:
            if cap is not None:
                if task not in self.group_running:
                    self.group_running[task] = self.steps.group_running(task)
                if self.group_running[task].get(group, 0) >= cap:
                    return False
            if group_rate is not None and self.room(f"group:{task}:{group}", group_rate) < 1:
                return False
        # Fits: spend.
        self.task_room[task] -= 1
        if rate is not None:
            self.tokens[f"task:{task}"] -= 1
        if group is not None:
            if cap is not None:
                running = self.group_running[task]
                running[group] = running.get(group, 0) + 1
            if group_rate is not None:
                self.tokens[f"group:{task}:{group}"] -= 1
        return True


def claim_fair(queue: str, limit: int, limits: dict[str, int], flow: ClaimFlow,
               steps: ClaimTx) -> list[Row]:
    """Claim up to ``limit`` jobs of a fair queue: round-robin over the groups with waiting
    jobs, in group-key order from where the last claim left off, each group giving its
    first ``weight`` due jobs per turn (priority wins within a group). Jobs without a group
    take one turn per round, as a group of their own. Every limit of ``flow`` still holds.

    Steps through at most FAIR_SCAN groups (an index probe each): never a whole backlog.
    """
    tokens, room = token_room(steps)

    if flow.queue_rate is not None:
        limit = min(limit, room(f"queue:{queue}", flow.queue_rate))
    admit = _Admit(limits, flow, steps, room, tokens)
    chosen: list[int] = []
    seen: dict[str | None, int] = {}  # rows looked at per group (a later turn skips them)
    start, served = steps.fair_cursor()
    last = start

    def serve(rows: list[Row]) -> bool:
        nonlocal last, served
        gave = False
        for job_id, group, task in rows:
            key = None if group is None else str(group)
            seen[key] = seen.get(key, 0) + 1
            if len(chosen) < limit and admit(str(task), key):
                chosen.append(int(job_id))
                served = served + 1 if (key or "") == last else 1
                last = key or ""
                gave = True
        return gave

    if start and served < flow.weights.get(start, 1) and limit > 0:
        # The group last served has turns left of its weight: finish them first.
        serve(steps.fair_heads([start], [flow.weights.get(start, 1) - served], [0]))
    visited = 0
    after = start
    full = not start  # this pass began at the start of the keys: a whole round
    gave = False
    while len(chosen) < limit and visited < FAIR_SCAN:
        want = min(limit - len(chosen), FAIR_SCAN - visited)
        groups = steps.fair_groups(after, want)
        share = 1
        visited += len(groups)
        if groups:
            # A whole round fits in this claim (few groups): each takes an even share of
            # what is left, in one statement, instead of going round one job at a time.
            # (Jobs without a group count as one more group.)
            share = 1 if not full or len(groups) == want else \
                -(-(limit - len(chosen)) // (len(groups) + 1))
            take = [flow.weights.get(g, 1) * share for g in groups]
            rows = steps.fair_heads(groups, take, [seen.get(g, 0) for g in groups])
            gave |= serve(_round_robin(rows, flow.weights) if share > 1 else rows)
            after = groups[-1]
        if len(chosen) >= limit or len(groups) == want:
            continue
        # The end of the keys: jobs without a group take their turn, then wrap around.
        gave |= serve(steps.fair_ungrouped(share, seen.get(None, 0), FAIR_PEEK))
        if full and not gave:
            break  # a whole round gave nothing: nothing more fits now
        full, gave, after = True, False, ""
        visited += 1
    if chosen:
        steps.fair_set_cursor(last, served)
    rows = steps.claim_ids(chosen) if chosen else []  # the worker starts them in claim order
    if flow.queue_rate is not None:
        tokens[f"queue:{queue}"] -= len(rows)
    for key, left in tokens.items():
        steps.set_bucket(key, left)
    return rows


def _round_robin(rows: list[Row], weights: dict[str, int]) -> list[Row]:
    """Rows listed group by group, dealt out a turn (the group's weight) at a time: every
    group's k-th turn before any group's (k+1)-th, so a claim's last places are shared."""
    rank: dict[Any, int] = {}
    dealt = []
    for i, row in enumerate(rows):
        n = rank.get(row[1], 0)
        rank[row[1]] = n + 1
        dealt.append((n // weights.get(str(row[1]), 1), i, row))
    return [row for _, _, row in sorted(dealt, key=lambda d: (d[0], d[1]))]
