"""A claim for one queue: which kind its limits call for, and running it.

The kinds one statement does are the engine's (``store.claims.claim``); the others are
the loops of flow/claim_limited.py and flow/claim_fair.py over the engine's statements,
in one transaction (``store.claims.begin``) that makes the claimers of a limited task
take turns. Either way a claim is the same round trips as when the store chose.
"""

from __future__ import annotations

from shiftwork.flow.claim_fair import claim_fair
from shiftwork.flow.claim_limited import claim_with_flow
from shiftwork.model.limits import ClaimFlow, ClaimKind
from shiftwork.model.records import ClaimedJob
from shiftwork.store.base import Store
from shiftwork.store.jobs import claimed_jobs

_NO_FLOW = ClaimFlow()


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


def claim(store: Store, queue: str, limit: int, worker_id: str, lease_seconds: float,
          limits: dict[str, int] | None = None,
          flow: ClaimFlow | None = None) -> list[ClaimedJob]:
    """Claim up to ``limit`` due jobs of ``queue``; each claim increments ``attempt``.

    ``limits`` maps task names to fleet-wide concurrency limits; ``flow`` adds rate
    buckets and per-group caps, spent only for jobs claimed.
    """
    limits, flow = limits or {}, flow or _NO_FLOW
    kind = claim_kind(limits, flow)
    claims = store.claims
    if claims.in_one_statement(kind):
        return claims.claim(kind, queue, limit, worker_id, lease_seconds, flow)
    # Rows are turned into jobs after the connection (and any lock) is given back.
    with claims.begin(queue, worker_id, lease_seconds) as tx:
        if flow.fair:
            rows = claim_fair(queue, limit, limits, flow, tx)
        else:
            rows = claim_with_flow(queue, limit, limits, flow, tx)
    return claimed_jobs(rows)
