"""A claim under flow control, written once for both engines: rate buckets, group caps.

The caller runs :func:`claim_with_flow` in one transaction that makes the claimers of a
limited task take turns (a lock per task on Postgres, the write lock on SQLite) and
locks each bucket row it reads until commit, so tokens and group counts are exact across
every worker. Tokens are spent only for jobs actually claimed; a job over a limit stays
waiting, its attempt untouched.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from shiftwork.flow.limits import ClaimFlow, RateLimit
from shiftwork.store.jobs import ClaimRows, Row


class ClaimKind(Enum):
    """The claims that really differ. On Postgres each of the first four is one statement
    (a function, store/postgres/migrations/functions.sql) and the last two are the Python
    loops below over the engine's steps; on SQLite, whose write lock already makes claimers
    take turns, every kind runs those loops."""

    PLAIN = "plain"  # no limit but the worker's slots
    QUEUE_RATE = "queue_rate"  # only the queue's own rate
    TASK_RATES = "task_rates"  # only task rate limits
    FAIR = "fair"  # a fair queue with no other limit (no weights either)
    LIMITED = "limited"  # anything else: claim_with_flow
    FAIR_LIMITED = "fair_limited"  # a fair queue with more: claim_fair


def claim_kind(limits: dict[str, int], flow: ClaimFlow) -> ClaimKind:
    """Which claim ``limits`` (task concurrency) and ``flow`` call for."""
    has = {name for name, on in (
        ("limits", bool(limits)), ("queue_rate", flow.queue_rate is not None),
        ("task_rates", bool(flow.task_rates)), ("group_caps", bool(flow.group_caps)),
        ("group_rates", bool(flow.group_rates)),
        # weights only count on a fair queue, the one claim that reads them
        ("weights", flow.fair and bool(flow.weights))) if on}
    if flow.fair:
        return ClaimKind.FAIR if not has else ClaimKind.FAIR_LIMITED
    if not has:
        return ClaimKind.PLAIN
    if has == {"queue_rate"}:
        return ClaimKind.QUEUE_RATE
    if has == {"task_rates"}:
        return ClaimKind.TASK_RATES
    return ClaimKind.LIMITED


#: Due jobs read per page when choosing jobs whose group has room, and pages at most.
GROUP_PAGE = 200
GROUP_PAGES = 10

#: (task, how many, after (priority, run_at, id) or None) -> rows (id, group, priority, run_at)
Candidates = Callable[[str, int, "tuple[Any, Any, int] | None"], list[Row]]


@dataclass
class ClaimSteps:
    """The engine's statements, bound to one connection inside the claim's transaction."""

    running: Callable[[str], int]  # a task's running jobs (takes its lock on Postgres)
    claim: ClaimRows
    lock_task: Callable[[str], None]
    bucket: Callable[[str, RateLimit], float]  # tokens now, the bucket's row locked
    set_bucket: Callable[[str, float], None]
    group_running: Callable[[str], dict[str, int]]
    candidates: Candidates
    claim_ids: Callable[[list[int]], list[Row]]


def claim_with_flow(queue: str, limit: int, limits: dict[str, int], flow: ClaimFlow,
                    steps: ClaimSteps) -> list[Row]:
    """Claim up to ``limit`` jobs of ``queue`` within task concurrency (``limits``), rate
    buckets and group caps (``flow``): limited tasks one at a time, then the rest."""
    tokens, room = _token_room(steps)

    if flow.queue_rate is not None:
        limit = min(limit, room(f"queue:{queue}", flow.queue_rate))
    rows: list[Row] = []
    special = sorted(set(limits) | flow.tasks)
    for task in special:
        if len(rows) >= limit:
            break
        n = limit - len(rows)
        if task in limits:  # (a limit of 0 excludes the task: nothing counted or locked)
            n = min(n, limits[task] and limits[task] - steps.running(task))
        rate = flow.task_rates.get(task)
        if rate is not None:
            n = min(n, room(f"task:{task}", rate))
        if n <= 0:
            continue
        if task in flow.grouped:
            if task not in limits:
                steps.lock_task(task)
            got = _within_groups(task, n, flow.group_caps.get(task),
                                 flow.group_rates.get(task), room, tokens, steps)
        else:
            got = steps.claim(n, task, [])
        rows += got
        if rate is not None:
            tokens[f"task:{task}"] -= len(got)
    if len(rows) < limit:
        rows += steps.claim(limit - len(rows), None, special)
    if flow.queue_rate is not None:
        tokens[f"queue:{queue}"] -= len(rows)
    for key, left in tokens.items():
        steps.set_bucket(key, left)
    return rows


def _within_groups(task: str, n: int, cap: int | None, rate: RateLimit | None,
                   room: Callable[[str, RateLimit], int], tokens: dict[str, float],
                   steps: ClaimSteps) -> list[Row]:
    """Up to ``n`` due jobs of ``task``, in claim order, skipping jobs whose group already
    runs ``cap`` or has no token left in its own bucket; pages through the backlog so one
    busy group does not hide the others."""
    running = steps.group_running(task) if cap is not None else {}
    chosen: list[int] = []
    after: tuple[Any, Any, int] | None = None
    for _ in range(GROUP_PAGES):
        page = steps.candidates(task, GROUP_PAGE, after)
        for job_id, group in _rows(page):
            if group is not None:
                if cap is not None and running.get(group, 0) >= cap:
                    continue
                if rate is not None:
                    key = f"group:{task}:{group}"
                    if room(key, rate) < 1:
                        continue
                    tokens[key] -= 1
                running[group] = running.get(group, 0) + 1
            chosen.append(job_id)
            if len(chosen) >= n:
                return steps.claim_ids(chosen)
        if len(page) < GROUP_PAGE:
            break
        last = page[-1]
        after = (last[2], last[3], last[0])
    return steps.claim_ids(chosen) if chosen else []


def _rows(page: Sequence[Row]) -> list[tuple[int, str | None]]:
    return [(int(r[0]), None if r[1] is None else str(r[1])) for r in page]


# -- fair queues ------------------------------------------------------------------------

#: Groups a fair claim steps through at most (one index probe each), so a claim's cost is
#: bounded by this, not by how many groups or jobs wait.
FAIR_SCAN = 256

#: Jobs without a group on a fair queue are found among this many first waiting jobs: a
#: bounded look, so give every job of a fair queue a group (docs/flow-control.md).
FAIR_PEEK = 50


@dataclass
class FairSteps:
    """The engine's statements for a fair queue, inside the claim's transaction."""

    # the last group served and how many of its turn it had (the row locked until commit)
    cursor: Callable[[], tuple[str, int]]
    set_cursor: Callable[[str, int], None]
    groups: Callable[[str, int], list[str]]  # up to n groups with waiting jobs after a key
    # (groups, take, skip) -> rows (id, group, task): each group's first due jobs
    heads: Callable[[list[str], list[int], list[int]], list[Row]]
    ungrouped: Callable[[int, int], list[Row]]  # (take, skip) -> jobs without a group


class _Admit:
    """Whether one more job of a task (and group) fits every limit, spending if it does."""

    def __init__(self, limits: dict[str, int], flow: ClaimFlow, steps: ClaimSteps,
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
               steps: ClaimSteps, fair: FairSteps) -> list[Row]:
    """Claim up to ``limit`` jobs of a fair queue: round-robin over the groups with waiting
    jobs, in group-key order from where the last claim left off, each group giving its
    first ``weight`` due jobs per turn (priority wins within a group). Jobs without a group
    take one turn per round, as a group of their own. Every limit of ``flow`` still holds.

    Steps through at most FAIR_SCAN groups (an index probe each): never a whole backlog.
    """
    tokens, room = _token_room(steps)

    if flow.queue_rate is not None:
        limit = min(limit, room(f"queue:{queue}", flow.queue_rate))
    admit = _Admit(limits, flow, steps, room, tokens)
    chosen: list[int] = []
    seen: dict[str | None, int] = {}  # rows looked at per group (a later turn skips them)
    start, served = fair.cursor()
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
        serve(fair.heads([start], [flow.weights.get(start, 1) - served], [0]))
    visited = 0
    after = start
    full = not start  # this pass began at the start of the keys: a whole round
    gave = False
    while len(chosen) < limit and visited < FAIR_SCAN:
        want = min(limit - len(chosen), FAIR_SCAN - visited)
        groups = fair.groups(after, want)
        share = 1
        visited += len(groups)
        if groups:
            # A whole round fits in this claim (few groups): each takes an even share of
            # what is left, in one statement, instead of going round one job at a time.
            # (Jobs without a group count as one more group.)
            share = 1 if not full or len(groups) == want else \
                -(-(limit - len(chosen)) // (len(groups) + 1))
            take = [flow.weights.get(g, 1) * share for g in groups]
            rows = fair.heads(groups, take, [seen.get(g, 0) for g in groups])
            gave |= serve(_round_robin(rows, flow.weights) if share > 1 else rows)
            after = groups[-1]
        if len(chosen) >= limit or len(groups) == want:
            continue
        # The end of the keys: jobs without a group take their turn, then wrap around.
        gave |= serve(fair.ungrouped(share, seen.get(None, 0)))
        if full and not gave:
            break  # a whole round gave nothing: nothing more fits now
        full, gave, after = True, False, ""
        visited += 1
    if chosen:
        fair.set_cursor(last, served)
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


def _token_room(steps: Any) -> tuple[dict[str, float], Callable[[str, RateLimit], int]]:
    """The tokens this claim has read per bucket (each row read once, then locked until
    commit, and spent from here), and how many whole ones a bucket has left."""
    tokens: dict[str, float] = {}

    def room(key: str, rate: RateLimit) -> int:
        if key not in tokens:
            tokens[key] = steps.bucket(key, rate)
        return max(0, int(tokens[key]))

    return tokens, room
