"""Flow control declared on tasks and queues: rate limits and groups.

``rate_limit="100/s"`` (or ``"N/m"``, ``"N/h"``, or :class:`RateLimit`) allows at most N
job starts per period across every worker, counted by a token bucket in the database
(see docs/flow-control.md). ``group_by`` names the argument (or a callable of the
arguments) whose value is a job's group; ``group_concurrency`` caps the running jobs of
each group, fleet-wide, and ``group_rate_limit`` gives each group its own bucket.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from shiftwork.core.bounds import seconds
from shiftwork.core.errors import ConfigurationError

_PERIODS = {"s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "hour": 3600.0}
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*/\s*([a-z]+)\s*$")

#: Where a job's group is kept: its meta (``{"group": "acme"}``), read by the claim.
GROUP_META_KEY = "group"

#: Longest group key stored (characters): a group is an id, not a payload.
MAX_GROUP_LENGTH = 200


@dataclass(frozen=True)
class RateLimit:
    """At most ``n`` starts per ``per`` seconds, spread evenly: a token every ``per / n``
    seconds, and up to ``burst`` saved up after a quiet spell (default a tenth of ``n``,
    at least 1). So any window of ``per`` seconds holds at most ``n + burst`` starts."""

    n: float
    per: float = 1.0
    burst: float | None = None

    def __post_init__(self) -> None:
        # n and burst are counts, per a duration; all reach the buckets' columns
        for name, value in (("n", self.n), ("per", self.per), ("burst", self.burst)):
            if value is None and name == "burst":
                continue
            try:
                seconds(value, f"RateLimit: {name}", allow_zero=False)
            except ConfigurationError:
                raise ConfigurationError(f"RateLimit: {name} must be a finite number > 0, "
                                         f"got {value!r}") from None
        if self.burst is not None and self.burst < 1:
            raise ConfigurationError(f"RateLimit: burst must be a number >= 1, got {self.burst!r}")

    @property
    def rate(self) -> float:
        """Tokens per second."""
        return float(self.n) / float(self.per)

    @property
    def capacity(self) -> float:
        """The bucket's size: how many may start at once after a quiet spell."""
        return float(self.burst if self.burst is not None else max(1, math.ceil(self.n / 10)))

    def __str__(self) -> str:
        return f"{self.n:g}/{self.per:g}s" + (f" (burst {self.burst:g})" if self.burst else "")


def rate_limit(value: RateLimit | str | None, what: str) -> RateLimit | None:
    """``"100/s"``, ``"10/m"``, ``"5/h"`` or a :class:`RateLimit`; None for no limit."""
    if value is None or isinstance(value, RateLimit):
        return value
    if isinstance(value, str):
        m = _RATE.match(value.lower())
        if m and m.group(2) in _PERIODS and float(m.group(1)) > 0:
            return RateLimit(float(m.group(1)), _PERIODS[m.group(2)])
    raise ConfigurationError(
        f"{what}: rate limit {value!r} is not understood; write it as \"N/s\", \"N/m\" or "
        "\"N/h\" (e.g. \"100/s\") or RateLimit(n, per=seconds, burst=...)")


GroupBy = str | Callable[..., Any]


def check_group(value: Any, what: str) -> str:
    """A group key as stored: a non-empty string of at most MAX_GROUP_LENGTH characters."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ConfigurationError(f"{what}: a group must be a string or an integer, "
                                 f"got {type(value).__name__}")
    text = str(value)
    if not text or len(text) > MAX_GROUP_LENGTH or "\x00" in text:
        raise ConfigurationError(f"{what}: a group must be 1-{MAX_GROUP_LENGTH} characters "
                                 f"without NUL, got {text[:40]!r}")
    return text


def group_weights(value: Any, what: str) -> dict[str, int]:
    """``{"acme": 3}``: a group served 3 jobs per turn of a fair queue (others 1)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigurationError(f"{what}: weights must be a dict of group -> whole number "
                                 f"of jobs per turn, got {type(value).__name__}")
    out: dict[str, int] = {}
    for group, weight in value.items():
        key = check_group(group, what)
        checked = positive_int(weight, f"{what}: the weight of group {key!r}")
        assert checked is not None
        out[key] = checked
    return out


def positive_int(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(f"{what} must be a whole number >= 1, got {value!r}")
    return value


@dataclass(frozen=True)
class ClaimFlow:
    """What a claim for one queue must respect beyond slots and task concurrency.

    Bucket keys name what they limit: ``queue:<name>`` and ``task:<name>``.
    """

    queue_rate: RateLimit | None = None
    task_rates: dict[str, RateLimit] = field(default_factory=dict)
    group_caps: dict[str, int] = field(default_factory=dict)  # task -> running per group
    group_rates: dict[str, RateLimit] = field(default_factory=dict)  # task -> per group
    fair: bool = False  # round-robin across the queue's groups (app.queue(fair=True))
    weights: dict[str, int] = field(default_factory=dict)  # group -> jobs per turn (default 1)

    def __bool__(self) -> bool:
        return bool(self.queue_rate or self.task_rates or self.group_caps or self.group_rates
                    or self.fair)

    @property
    def tasks(self) -> set[str]:
        """Tasks claimed one at a time (each within its own room)."""
        return set(self.task_rates) | set(self.group_caps) | set(self.group_rates)

    @property
    def grouped(self) -> set[str]:
        """Tasks whose jobs are chosen group by group (a cap or a rate per group)."""
        return set(self.group_caps) | set(self.group_rates)

    def next_token_in(self) -> float | None:
        """Seconds until the fastest of these buckets has a new token (None: no buckets):
        how long a producer waits before trying again once a limit stopped its claim."""
        rates = [r.rate for r in (self.queue_rate, *self.task_rates.values(),
                                  *self.group_rates.values()) if r]
        return 1.0 / max(rates) if rates else None


@dataclass(frozen=True)
class LimitStatus:
    """One declared rate limit and the tokens its bucket holds now."""

    key: str  # queue:<name>, task:<name>, or group:<task>:* for per-group limits
    limit: RateLimit
    tokens: float | None  # None: never used yet (a full bucket); per-group: not shown


def tokens_now(tokens: float, updated_at: float, now: float, limit: RateLimit) -> float:
    """A bucket's tokens at ``now`` (seconds), refilled since it was last written."""
    return min(limit.capacity, tokens + max(0.0, now - updated_at) * limit.rate)


class ClaimKind(Enum):
    """The claims that really differ (flow/claiming.py chooses). On Postgres each of the
    first four is one statement (a function, store/postgres/migrations/functions.sql) and
    the last two are the Python loops of flow/claim_limited.py and flow/claim_fair.py over
    the engine's statements; on SQLite, whose write lock already makes claimers take
    turns, every kind but the plain one runs those loops."""

    PLAIN = "plain"  # no limit but the worker's slots
    QUEUE_RATE = "queue_rate"  # only the queue's own rate
    TASK_RATES = "task_rates"  # only task rate limits
    FAIR = "fair"  # a fair queue with no other limit (no weights either)
    LIMITED = "limited"  # anything else: claim_with_flow
    FAIR_LIMITED = "fair_limited"  # a fair queue with more: claim_fair
