"""A claim under flow control: task concurrency, rate buckets, group caps.

The caller (flow/claiming.py) runs :func:`claim_with_flow` in one transaction that makes
the claimers of a limited task take turns (a lock per task on Postgres, the write lock on
SQLite) and locks each bucket row it reads until commit, so tokens and group counts are
exact across every worker. Tokens are spent only for jobs actually claimed; a job over a
limit stays waiting, its attempt untouched. The statements are the engine's, named
(:class:`~shiftwork.store.base.ClaimTx`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from shiftwork.model.limits import ClaimFlow, RateLimit
from shiftwork.store.base import ClaimTx
from shiftwork.store.jobs import Row

#: Due jobs read per page when choosing jobs whose group has room, and pages at most.
GROUP_PAGE = 200
GROUP_PAGES = 10

def claim_with_flow(queue: str, limit: int, limits: dict[str, int], flow: ClaimFlow,
                    steps: ClaimTx) -> list[Row]:
    """Claim up to ``limit`` jobs of ``queue`` within task concurrency (``limits``), rate
    buckets and group caps (``flow``): limited tasks one at a time, then the rest."""
    tokens, room = token_room(steps)

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
                   steps: ClaimTx) -> list[Row]:
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


def token_room(steps: ClaimTx) -> tuple[dict[str, float], Callable[[str, RateLimit], int]]:
    """The tokens this claim has read per bucket (each row read once, then locked until
    commit, and spent from here), and how many whole ones a bucket has left."""
    tokens: dict[str, float] = {}

    def room(key: str, rate: RateLimit) -> int:
        if key not in tokens:
            tokens[key] = steps.bucket(key, rate)
        return max(0, int(tokens[key]))

    return tokens, room
